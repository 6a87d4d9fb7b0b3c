import NIOCore
import ProxyKit

/// How long a pooled upstream connection may be reused before the answer it was dialed from is
/// asked again. HTTPDNS exists so that traffic follows the service's answers; a keep-alive
/// connection kept busy would otherwise outlive every answer change (the pool's idle timeout never
/// fires while it is in use). A renewal costs one cache lookup per answer lifetime, not one per
/// request.
package struct ConnectionLease: Equatable, Sendable {
    /// Where the dialed address came from: decides how the lease can be renewed.
    var source: ResolutionSource
    /// Reused without asking until then.
    var until: NIODeadline

    /// System DNS gives no TTL: its answers are asked again after this long (a fresh dial), as a
    /// TTL-less DNS cache would.
    static let systemAnswerLifetime = TimeAmount.seconds(30)
    /// While the answer is stale (its refresh under way), the connection is checked again this
    /// often, so a refreshed answer that dropped its address takes effect soon after it arrives.
    static let staleRecheck = TimeAmount.milliseconds(100)

    /// The lease of a connection dialed at `now` from an answer current for `lifetime` more: an
    /// HTTPDNS answer's remaining TTL (unknown: checked on the first reuse); system DNS's fixed
    /// lifetime (also for a name the parent proxy resolved); a literal address never changes; a
    /// hosts-file record is checked on the first reuse.
    package init(source: ResolutionSource, dialedAt now: NIODeadline, lifetime: TimeAmount? = nil) {
        self.source = source
        switch source {
        case .literal: until = .distantFuture
        case .system, .fallback, .parent: until = now + Self.systemAnswerLifetime
        case .httpdns, .cache, .stale, .local: until = now + max(.zero, lifetime ?? .zero)
        }
    }

    /// A lease that never needs renewing (connections made by tests and pre-lease code).
    static let unlimited = ConnectionLease(source: .literal, dialedAt: .distantFuture)

    func isCurrent(at now: NIODeadline) -> Bool { now < until }

    /// What the resolver says about an expired lease.
    package enum Verdict: Equatable, Sendable {
        /// The address is still in the current answer: reuse until then.
        case renew(until: NIODeadline)
        /// Do not reuse; close the connection when it is idle. `reason` is for the log.
        case retire(reason: String)
    }
}

/// Answers whether a pooled connection's address is still what the resolver would give now.
package protocol LeaseRenewing: Sendable {
    /// `ip`: the address the connection dialed, as text; `source`: where that address came from.
    func renewLease(host: String, ip: String, source: ResolutionSource, now: NIODeadline) -> ConnectionLease.Verdict
}

extension ConnectionLease {
    /// The verdict when no cache can vouch for the address: a literal never changes; anything else
    /// is dialed afresh (resolved again) once its lease ends.
    static func renewalWithoutCache(_ source: ResolutionSource) -> Verdict {
        switch source {
        case .literal: .renew(until: .distantFuture)
        case .system, .fallback: .retire(reason: "system DNS answer older than \(systemAnswerLifetime.nanoseconds / 1_000_000_000) s")
        case .parent: .retire(reason: "the parent proxy's answer, older than \(systemAnswerLifetime.nanoseconds / 1_000_000_000) s")
        case .httpdns, .cache, .stale, .local: .retire(reason: "answer lifetime over (\(source.rawValue))")
        }
    }
}

extension UpstreamResolver {
    package func renewLease(host: String, ip: String, source: ResolutionSource, now: NIODeadline) -> ConnectionLease.Verdict {
        ConnectionLease.renewalWithoutCache(source)
    }
}
