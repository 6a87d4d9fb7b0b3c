import NIOConcurrencyHelpers
import NIOCore
import ProxyConfig
import Synchronization

/// Decides, when a client connection is accepted, whether it may be served: its address must be
/// in `--allow-client`, and neither `--max-connections` nor `--max-connections-per-client` may be
/// full. An admitted connection holds its place until it closes (`release`).
final class ClientAdmission: Sendable {
    enum Verdict: Sendable, Equatable {
        case admitted
        /// 403: the address is outside the allowed blocks.
        case notAllowed(ProxyError)
        /// 503 with Retry-After: a connection limit is full.
        case overLimit(ProxyError)

        var error: ProxyError? {
            switch self {
            case .admitted: nil
            case .notAllowed(let error), .overLimit(let error): error
            }
        }
    }

    private struct Counts {
        var total = 0
        var perClient: [IPAddress: Int] = [:]
    }

    let allowedBlocks: [CIDR]
    let maxConnections: Int
    let maxConnectionsPerClient: Int
    private let counts = NIOLockedValueBox(Counts())
    private let deniedCount = Atomic<Int>(0)
    private let overLimitCount = Atomic<Int>(0)

    init(allowedBlocks: [CIDR], maxConnections: Int, maxConnectionsPerClient: Int) {
        self.allowedBlocks = allowedBlocks
        self.maxConnections = maxConnections
        self.maxConnectionsPerClient = maxConnectionsPerClient
    }

    /// Connections refused by the client ACL, and by the limits, since start.
    var rejectedByACL: Int { deniedCount.load(ordering: .relaxed) }
    var rejectedByLimits: Int { overLimitCount.load(ordering: .relaxed) }
    /// Admitted connections now open.
    var openConnections: Int { counts.withLockedValue { $0.total } }

    /// Admits or refuses a connection from `remote`. When admitted, `release` must be called once
    /// when the connection closes.
    func admit(_ remote: SocketAddress?) -> (verdict: Verdict, client: IPAddress?) {
        guard let remote, let address = IPAddress(remote) else {
            // Not an IP peer (a Unix socket): nothing to match or count.
            return (.admitted, nil)
        }
        let client = address.unmappedIPv4 ?? address
        guard allowedBlocks.contains(where: { $0.contains(client) }) else {
            deniedCount.wrappingAdd(1, ordering: .relaxed)
            return (.notAllowed(.clientNotAllowed(client)), nil)
        }
        let refusal: ProxyError? = counts.withLockedValue { counts in
            if counts.total >= maxConnections {
                return .tooManyConnections("the proxy has \(counts.total) open connections, its limit (--max-connections)")
            }
            let fromClient = counts.perClient[client, default: 0]
            if fromClient >= maxConnectionsPerClient {
                return .tooManyConnections("\(client) has \(fromClient) open connections, the limit per client (--max-connections-per-client)")
            }
            counts.total += 1
            counts.perClient[client] = fromClient + 1
            return nil
        }
        if let refusal {
            overLimitCount.wrappingAdd(1, ordering: .relaxed)
            return (.overLimit(refusal), nil)
        }
        return (.admitted, client)
    }

    func release(_ client: IPAddress) {
        counts.withLockedValue { counts in
            counts.total -= 1
            let left = counts.perClient[client, default: 1] - 1
            if left > 0 { counts.perClient[client] = left } else { counts.perClient[client] = nil }
        }
    }
}
