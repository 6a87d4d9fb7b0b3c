/// Which address families to ask the service for.
public enum AddressFamilies: String, Sendable, Hashable {
    case ipv4
    case ipv6
    case both

    public var wantsIPv4: Bool { self != .ipv6 }
    public var wantsIPv6: Bool { self != .ipv4 }
}

/// One HTTPDNS service speaking one wire format. Implementations own their server failover; the
/// cache, single-flight and fallback to system DNS live above them.
public protocol HTTPDNSProvider: Sendable {
    /// A short name for logs and the `resolve` command ("alibaba", "json", "doh", "static").
    var name: String { get }

    func resolve(_ host: String, families: AddressFamilies) async throws(ResolveFailure) -> ResolvedAnswer

    /// Whether `resolveBatch` asks the service once for several names (preloading uses it).
    var supportsBatch: Bool { get }

    func resolveBatch(
        _ hosts: [String],
        families: AddressFamilies
    ) async throws(ResolveFailure) -> [String: Result<ResolvedAnswer, ResolveFailure>]

    /// Called when the host's network changed (addresses or routes): a provider that learns its
    /// service addresses at run time (Alibaba's `/ss` scheduling) fetches them again. Must not
    /// throw or block for long; the default does nothing.
    func networkDidChange() async
}

extension HTTPDNSProvider {
    public var supportsBatch: Bool { false }

    public func networkDidChange() async {}

    public func resolveBatch(
        _ hosts: [String],
        families: AddressFamilies
    ) async throws(ResolveFailure) -> [String: Result<ResolvedAnswer, ResolveFailure>] {
        var out: [String: Result<ResolvedAnswer, ResolveFailure>] = [:]
        for host in hosts {
            do {
                out[host] = .success(try await resolve(host, families: families))
            } catch {
                out[host] = .failure(error)
            }
        }
        return out
    }
}
