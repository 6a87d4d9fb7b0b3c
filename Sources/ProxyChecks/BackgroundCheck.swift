import HTTPDNS
import ProxyUpstream
import ServiceLifecycle

/// What the background checks (the system-DNS audit and address probing) share: both look at each
/// new HTTPDNS answer, queue the names that are due, and work through the queue on one task of
/// their own, at their own pace, until shutdown. A check supplies its schedule; the loop is here.
package protocol BackgroundCheck: AnyObject, Service, Sendable {
    /// A new HTTPDNS answer for `host` (from any thread): queue it if the check wants it now.
    func offer(host: String, answer: ResolvedAnswer)
    /// The network changed (see the network-change monitor): answers that come in from now on are
    /// looked at again even if their names were looked at within their TTL.
    func networkDidChange()
}

extension BackgroundCheck {
    /// Takes every new answer from `feed` (call once, before the service runs).
    package func watch(_ feed: HTTPDNSAnswerFeed) {
        feed.subscribe { [weak self] host, answer in self?.offer(host: host, answer: answer) }
    }
}

/// The worker loop of a background check: asleep until woken (something was queued) or until the
/// next job is due, then runs it; ends at graceful shutdown.
final class BackgroundCheckWorker<C: Clock>: Sendable where C.Duration == Duration {
    /// What the check's schedule says when asked at an instant.
    enum Next<Job> {
        /// Nothing queued: sleep until woken.
        case idle
        /// Something queued, not yet due (a rate limit): sleep this long.
        case wait(Duration)
        case run(Job)
    }

    let clock: C
    private let wake: AsyncStream<Void>
    private let wakeSink: AsyncStream<Void>.Continuation

    init(clock: C) {
        self.clock = clock
        // One pending wake-up is enough: the loop asks the schedule again after each.
        (wake, wakeSink) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Something was queued: wakes the loop if it sleeps for lack of work.
    func wakeUp() {
        wakeSink.yield()
    }

    /// Asks `next` for work and runs it with `perform`, one job at a time, until graceful shutdown.
    func run<Job>(next: @escaping @Sendable (C.Instant) -> Next<Job>, perform: @escaping @Sendable (Job) async -> Void) async {
        await cancelWhenGracefulShutdown {
            var wakes = self.wake.makeAsyncIterator()
            while !Task.isCancelled {
                switch next(self.clock.now) {
                case .idle:
                    guard await wakes.next() != nil else { return }
                case .wait(let duration):
                    do { try await self.clock.sleep(for: duration) } catch { return }
                case .run(let job):
                    await perform(job)
                }
            }
        }
        wakeSink.finish()
    }
}
