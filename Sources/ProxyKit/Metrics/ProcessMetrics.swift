import CoreMetrics
import NIOConcurrencyHelpers

/// The `process_*` metrics, set from a fresh `ProcessSample` at each scrape (`update`), under the
/// names and types every Prometheus client uses, so stock dashboards and alerts work unchanged.
package final class ProcessMetrics: Sendable {
    package static let help: [String: String] = [
        "process_cpu_seconds_total": "Total user and system CPU time spent in seconds.",
        "process_resident_memory_bytes": "Resident memory size in bytes.",
        "process_virtual_memory_bytes": "Virtual memory size in bytes.",
        "process_open_fds": "Number of open file descriptors.",
        "process_max_fds": "Maximum number of open file descriptors.",
        "process_start_time_seconds": "Start time of the process since unix epoch in seconds.",
    ]

    private let cpu: FloatingPointCounter
    private let resident: Gauge
    private let virtual: Gauge
    private let openDescriptors: Gauge
    private let maxDescriptors: Gauge
    private let startTime: Gauge
    /// CPU seconds already counted: a counter only goes up, so each scrape adds the difference.
    private let counted = NIOLockedValueBox<Double>(0)

    package init(factory: any MetricsFactory = MetricsSystem.factory) {
        cpu = FloatingPointCounter(label: "process_cpu_seconds_total", factory: factory)
        resident = Gauge(label: "process_resident_memory_bytes", factory: factory)
        virtual = Gauge(label: "process_virtual_memory_bytes", factory: factory)
        openDescriptors = Gauge(label: "process_open_fds", factory: factory)
        maxDescriptors = Gauge(label: "process_max_fds", factory: factory)
        startTime = Gauge(label: "process_start_time_seconds", factory: factory)
        update()
    }

    /// Reads /proc and sets every metric (before the exposition is written).
    package func update() {
        guard let sample = ProcessSample.current() else { return }
        record(sample)
    }

    func record(_ sample: ProcessSample) {
        let added = counted.withLockedValue { counted -> Double in
            let added = max(0, sample.cpuSeconds - counted)
            counted += added
            return added
        }
        if added > 0 { cpu.increment(by: added) }
        resident.record(sample.residentBytes)
        virtual.record(sample.virtualBytes)
        openDescriptors.record(sample.openDescriptors)
        maxDescriptors.record(sample.maxDescriptors)
        startTime.record(sample.startTimeSeconds)
    }
}
