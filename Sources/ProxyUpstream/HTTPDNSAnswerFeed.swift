import HTTPDNS
import NIOConcurrencyHelpers

/// New answers from the HTTPDNS service (queries, refreshes, prefetches, preloads; not cache hits,
/// the system fallback or a static list) for the background checks that look at them: the
/// system-DNS audit and address probing. Listeners run on the resolver's task and must not block.
package final class HTTPDNSAnswerFeed: Sendable {
    package typealias Listener = @Sendable (_ host: String, _ answer: ResolvedAnswer) -> Void

    private let listeners = NIOLockedValueBox<[Listener]>([])

    package init() {}

    package func subscribe(_ listener: @escaping Listener) {
        listeners.withLockedValue { $0.append(listener) }
    }

    /// `host` as the service echoed it; listeners get it lowercased without the root dot.
    func publish(_ host: String, _ answer: ResolvedAnswer) {
        guard !answer.ipv4.isEmpty || !answer.ipv6.isEmpty else { return }
        let listeners = self.listeners.withLockedValue { $0 }
        guard !listeners.isEmpty else { return }
        var name = host.lowercased()
        while name.hasSuffix(".") { name.removeLast() }
        for listener in listeners {
            listener(name, answer)
        }
    }
}
