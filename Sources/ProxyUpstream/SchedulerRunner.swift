import HTTPDNS
import ServiceLifecycle

/// Runs the current provider's Alibaba service-IP scheduler, if it has one. A reload that builds
/// a new provider hands its scheduler over here: the old one is cancelled, the new one starts.
final class SchedulerRunner: Service, Sendable {
    private let changes: AsyncStream<AlibabaServiceScheduler?>
    private let sink: AsyncStream<AlibabaServiceScheduler?>.Continuation

    init(initial: AlibabaServiceScheduler?) {
        (changes, sink) = AsyncStream.makeStream(of: AlibabaServiceScheduler?.self, bufferingPolicy: .bufferingNewest(1))
        sink.yield(initial)
    }

    func replace(with scheduler: AlibabaServiceScheduler?) {
        sink.yield(scheduler)
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            var iterator = self.changes.makeAsyncIterator()
            // Ends when this task is cancelled (AsyncStream iteration is cancellation-aware).
            guard var current = await iterator.next() else { return }
            while !Task.isCancelled {
                let next = await withTaskGroup(of: Void.self) { group -> AlibabaServiceScheduler?? in
                    if let scheduler = current {
                        group.addTask { try? await scheduler.run() }
                    }
                    let next = await iterator.next()
                    group.cancelAll()
                    return next
                }
                guard let next else { return }
                current = next
            }
        }
    }
}
