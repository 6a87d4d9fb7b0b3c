/// The decisions of Alibaba's service-IP scheduling, without I/O: which IPs the queries rotate
/// through after each `/ss` outcome, whether the service is switched off, and what `/stats` shows.
struct AlibabaSchedulerState: Sendable {
    /// Why a `/ss` fetch runs.
    enum Trigger: String, Sendable {
        case start
        case periodic
        /// Every service IP failed in one rotation.
        case rotationFailed = "rotation_failed"
        case networkChange = "network_change"
    }

    /// What to do with the query servers after an outcome.
    enum Action: Sendable, Equatable {
        case keep
        case use([String])
    }

    /// What changed about the service's availability (for one clear log line per change).
    enum StatusChange: Sendable, Equatable {
        case none
        case disabled
        case enabled
    }

    let bootstrap: [String]
    private(set) var serviceIPs: [String]
    /// Whether `serviceIPs` came from a `/ss` answer (else: the bootstrap list).
    private(set) var fromSchedule = false
    private(set) var disabled = false
    private(set) var lastTrigger: Trigger?
    private(set) var lastResult: String?
    private(set) var lastUnixTime: Int?
    /// A trigger waiting for the runner (coalesced: a rotation failure outranks the others).
    private(set) var pending: Trigger?

    init(bootstrap: [String]) {
        self.bootstrap = bootstrap
        self.serviceIPs = bootstrap
    }

    mutating func request(_ trigger: Trigger) {
        if pending == .rotationFailed { return }
        pending = trigger
    }

    /// The trigger for the fetch about to run (`periodic` when the timer, not a request, woke us).
    mutating func takePending() -> Trigger {
        defer { pending = nil }
        return pending ?? .periodic
    }

    /// A `/ss` answer arrived.
    mutating func scheduled(_ schedule: AlibabaServiceSchedule, trigger: Trigger, unixTime: Int) -> (Action, StatusChange) {
        record(trigger, unixTime, schedule.disabled ? "disabled" : "ok")
        let change: StatusChange = schedule.disabled == disabled ? .none : (schedule.disabled ? .disabled : .enabled)
        disabled = schedule.disabled
        guard !schedule.serviceIPs.isEmpty else { return (.keep, change) }
        serviceIPs = schedule.serviceIPs
        fromSchedule = true
        return (.use(schedule.serviceIPs), change)
    }

    /// No bootstrap IP gave a usable `/ss` answer. The bootstrap list takes over when the current
    /// IPs just failed as a whole (or never came from a schedule); a scheduled list that still
    /// works is kept through a failed periodic refresh.
    mutating func failed(_ reason: String, trigger: Trigger, unixTime: Int) -> Action {
        record(trigger, unixTime, "failed: \(reason)")
        guard fromSchedule, trigger != .rotationFailed else {
            serviceIPs = bootstrap
            fromSchedule = false
            return .use(bootstrap)
        }
        return .keep
    }

    private mutating func record(_ trigger: Trigger, _ unixTime: Int, _ result: String) {
        lastTrigger = trigger
        lastResult = result
        lastUnixTime = unixTime
    }

    var snapshot: AlibabaSchedulerSnapshot {
        AlibabaSchedulerSnapshot(
            serviceIPs: serviceIPs,
            source: fromSchedule ? "scheduled" : "bootstrap",
            disabled: disabled,
            lastTrigger: lastTrigger?.rawValue,
            lastResult: lastResult,
            lastUnixTime: lastUnixTime
        )
    }
}

/// The scheduler's state for `/stats`.
public struct AlibabaSchedulerSnapshot: Sendable, Equatable, Encodable {
    /// The IPs queries rotate through now.
    public var serviceIPs: [String]
    /// "scheduled" (from `/ss`) or "bootstrap".
    public var source: String
    /// The service said `service_status: disable`.
    public var disabled: Bool
    public var lastTrigger: String?
    /// "ok", "disabled" or "failed: reason"; nil before the first fetch.
    public var lastResult: String?
    /// Unix seconds of the last fetch.
    public var lastUnixTime: Int?
}
