import NIOConcurrencyHelpers
import NIOCore
import ProxyConfig
import ProxyKit
import Synchronization

/// Decides, when a client connection is accepted, whether it may be served: its address must be
/// in `--allow-client`, and neither `--max-connections` nor `--max-connections-per-client` may be
/// full. An admitted connection holds its place until it closes (`release`).
package final class ClientAdmission: Sendable {
    package enum Verdict: Sendable, Equatable {
        case admitted
        /// 403: the address is outside the allowed blocks.
        case notAllowed(ProxyError)
        /// 503 with Retry-After: a connection limit is full.
        case overLimit(ProxyError)
        /// 400: the first byte says the client speaks what this port does not (a TLS ClientHello to
        /// the plain port); answered in HTTP, which a raw capture can read.
        case wrongProtocol(ProxyError)

        package var error: ProxyError? {
            switch self {
            case .admitted: nil
            case .notAllowed(let error), .overLimit(let error), .wrongProtocol(let error): error
            }
        }
    }

    private struct Counts {
        var total = 0
        var perClient: [IPAddress: Int] = [:]
        var allowedBlocks: [CIDR]
        var maxConnections: Int
        var maxConnectionsPerClient: Int
    }

    private let counts: NIOLockedValueBox<Counts>
    package var allowedBlocks: [CIDR] { counts.withLockedValue { $0.allowedBlocks } }
    package var maxConnections: Int { counts.withLockedValue { $0.maxConnections } }
    package var maxConnectionsPerClient: Int { counts.withLockedValue { $0.maxConnectionsPerClient } }
    private let deniedCount = Atomic<Int>(0)
    private let overLimitCount = Atomic<Int>(0)

    package init(allowedBlocks: [CIDR], maxConnections: Int, maxConnectionsPerClient: Int) {
        counts = NIOLockedValueBox(
            Counts(allowedBlocks: allowedBlocks, maxConnections: maxConnections, maxConnectionsPerClient: maxConnectionsPerClient))
    }

    /// A reload: new connections are judged by these; open ones keep their place (a lowered limit
    /// refuses new connections until enough have closed).
    package func update(allowedBlocks: [CIDR], maxConnections: Int, maxConnectionsPerClient: Int) {
        counts.withLockedValue {
            $0.allowedBlocks = allowedBlocks
            $0.maxConnections = maxConnections
            $0.maxConnectionsPerClient = maxConnectionsPerClient
        }
    }

    /// Connections refused by the client ACL, and by the limits, since start.
    package var rejectedByACL: Int { deniedCount.load(ordering: .relaxed) }
    package var rejectedByLimits: Int { overLimitCount.load(ordering: .relaxed) }
    /// Admitted connections now open.
    package var openConnections: Int { counts.withLockedValue { $0.total } }

    /// Admits or refuses a connection from `remote`. When admitted, `release` must be called once
    /// when the connection closes.
    package func admit(_ remote: SocketAddress?) -> (verdict: Verdict, client: IPAddress?) {
        guard let remote, let address = IPAddress(remote) else {
            // Not an IP peer (a Unix socket): nothing to match or count.
            return (.admitted, nil)
        }
        let client = address.unmappedIPv4 ?? address
        let refusal: ProxyError? = counts.withLockedValue { counts in
            guard counts.allowedBlocks.contains(where: { $0.contains(client) }) else {
                return .clientNotAllowed(client)
            }
            if counts.total >= counts.maxConnections {
                return .tooManyConnections("the proxy has \(counts.total) open connections, its limit (--max-connections)")
            }
            counts.total += 1
            // Loopback is the sidecar's own app (every connection of a pod comes from 127.0.0.1):
            // the per-client limit protects a shared proxy from one noisy client, and the app the
            // sidecar exists for is not that. The total limit still applies to it.
            if client.isLoopback { return nil }
            let fromClient = counts.perClient[client, default: 0]
            if fromClient >= counts.maxConnectionsPerClient {
                counts.total -= 1
                return .tooManyConnections("\(client) has \(fromClient) open connections, the limit per client (--max-connections-per-client)")
            }
            counts.perClient[client] = fromClient + 1
            return nil
        }
        if let refusal {
            if refusal.kind == .clientNotAllowed {
                deniedCount.wrappingAdd(1, ordering: .relaxed)
                return (.notAllowed(refusal), nil)
            }
            overLimitCount.wrappingAdd(1, ordering: .relaxed)
            return (.overLimit(refusal), nil)
        }
        return (.admitted, client)
    }

    package func release(_ client: IPAddress) {
        counts.withLockedValue { counts in
            counts.total -= 1
            if client.isLoopback { return }
            let left = counts.perClient[client, default: 1] - 1
            if left > 0 { counts.perClient[client] = left } else { counts.perClient[client] = nil }
        }
    }
}
