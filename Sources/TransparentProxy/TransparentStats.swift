import Synchronization

/// What the transparent listener did since the start (`/stats` → `transparent`, the admin page).
package final class TransparentStats: Sendable {
    /// Outcomes of a transparent connection's first bytes, one counter each.
    package enum Peek: Int, CaseIterable {
        case tls, tlsNoSNI, http, httpNoHost, unknown, silent, incomplete, malformed, tooLarge
        package var label: String {
            ["tls_sni", "tls_no_sni", "http_host", "http_no_host", "unknown", "silent", "incomplete", "malformed", "too_large"][rawValue]
        }
    }

    private let accepted = Atomic<Int>(0)
    private let peeks = Mutex<[Int]>(Array(repeating: 0, count: Peek.allCases.count))
    private let hijacks = Atomic<Int>(0)
    private let fallbacks = Atomic<Int>(0)
    private let refused = Atomic<Int>(0)
    private let noOriginalDestination = Atomic<Int>(0)

    package init() {}

    func accept() { accepted.add(1, ordering: .relaxed) }
    func peeked(_ peek: Peek) { peeks.withLock { $0[peek.rawValue] += 1 } }
    func hijack() { hijacks.add(1, ordering: .relaxed) }
    func fellBack() { fallbacks.add(1, ordering: .relaxed) }
    func refuse() { refused.add(1, ordering: .relaxed) }
    func missingOriginalDestination() { noOriginalDestination.add(1, ordering: .relaxed) }

    package var hijackCount: Int { hijacks.load(ordering: .relaxed) }

    package var snapshot: Snapshot {
        Snapshot(
            accepted: accepted.load(ordering: .relaxed),
            peeks: peeks.withLock { counts in Dictionary(uniqueKeysWithValues: Peek.allCases.map { ($0.label, counts[$0.rawValue]) }) },
            hijacks: hijacks.load(ordering: .relaxed),
            fallbacks: fallbacks.load(ordering: .relaxed),
            refused: refused.load(ordering: .relaxed),
            noOriginalDestination: noOriginalDestination.load(ordering: .relaxed)
        )
    }

    package struct Snapshot: Sendable, Equatable, Codable {
        /// Connections accepted on `--transparent-listen`.
        package var accepted: Int
        /// What their first bytes were, by outcome (`tls_sni`, `http_host`, `silent`, ...).
        package var peeks: [String: Int]
        /// Connections whose original destination is none of HTTPDNS's addresses for their name:
        /// the app's own DNS answer was hijacked or stale.
        package var hijacks: Int
        /// Names HTTPDNS had no answer for, relayed to the original destination.
        package var fallbacks: Int
        /// Connections closed without a relay (no answer or a hello still incomplete, with
        /// `--transparent-fallback refuse`; a destination the policy denies; a connect failure; the
        /// proxy's own connection redirected back to it).
        package var refused: Int
        /// Connections that were not redirected (no original destination, or it is this listener).
        package var noOriginalDestination: Int
    }
}
