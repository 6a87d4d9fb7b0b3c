import CurlTransport
import Logging
import NIOConcurrencyHelpers

/// Sends one logical query to a resolver service, moving through its bootstrap IPs on failures that
/// say "this server is in trouble" and stopping at once on answers that another server would
/// repeat (bad signature, unknown account).
public struct ResolverClient: Sendable {
    /// What a provider makes of one HTTP response.
    public enum Verdict: Sendable {
        case answer(ResolvedAnswer)
        /// A definitive failure (NXDOMAIN, no data, auth): do not ask another server.
        case fail(ResolveFailure)
        /// This server can't answer now (5xx, ServiceLevelDeny): try the next one.
        case nextServer(String)
    }

    public let transport: CurlTransport
    public let servers: ResolverServers
    public let timeout: Duration
    public let caFile: String?
    private let logger: Logger
    private let loggedFailures = NIOLockedValueBox(Set<String>())

    public init(transport: CurlTransport, servers: ResolverServers, timeout: Duration, caFile: String?, logger: Logger) {
        self.transport = transport
        self.servers = servers
        self.timeout = timeout
        self.caFile = caFile
        self.logger = logger
    }

    public func perform(
        _ makeRequest: () throws(ResolveFailure) -> CurlRequest,
        classify: (CurlResponse) -> Verdict
    ) async throws(ResolveFailure) -> ResolvedAnswer {
        guard case .go(let order) = servers.admit() else {
            throw ResolveFailure(kind: .network, message: "resolver service unreachable recently; backing off", negativeTTL: nil)
        }
        var request = try makeRequest()
        request.timeout = timeout
        request.caFile = caFile
        var lastFailure = ResolveFailure(kind: .network, message: "no resolver server answered", negativeTTL: nil)
        // One attempt per server IP, each connecting to exactly that IP (libcurl then keeps and
        // reuses connections per IP, so a failed server's cached connection is never picked for
        // the next one). nil: the URL's host is an IP literal or is found through system DNS.
        let candidates: [String?] = order.isEmpty ? [nil] : order.map { $0 }
        attempts: for ip in candidates {
            request.connectAddress = ip
            request.pinnedAddresses = ip.map { [$0] } ?? []
            let response: CurlResponse
            do {
                response = try await transport.send(request)
            } catch let error as CurlTransportError {
                lastFailure = ResolveFailure(kind: error.isTimeout ? .timeout : .network, message: "resolver service: \(error)", negativeTTL: nil)
                if servers.failed(ip: ip) { break attempts }
                continue
            } catch is CancellationError {
                servers.neutral()
                throw ResolveFailure(kind: .cancelled, message: "cancelled", negativeTTL: nil)
            } catch {
                servers.neutral()
                throw ResolveFailure(kind: .network, message: "resolver service: \(error)", negativeTTL: nil)
            }
            switch classify(response) {
            case .answer(let answer):
                servers.succeeded(ip: ip)
                var answer = answer
                answer.serverIP = response.remoteIP ?? ip
                return answer
            case .fail(let failure):
                if failure.kind == .auth {
                    servers.neutral()
                    logOnce(failure)
                } else {
                    servers.succeeded(ip: ip)
                }
                throw failure
            case .nextServer(let why):
                lastFailure = ResolveFailure(kind: .server, message: why, negativeTTL: nil)
                if servers.failed(ip: ip) { break attempts }
            }
        }
        throw lastFailure
    }

    /// Auth and configuration errors repeat on every query: say it clearly, once.
    private func logOnce(_ failure: ResolveFailure) {
        let first = loggedFailures.withLockedValue { $0.insert(failure.message).inserted }
        if first {
            logger.error(
                "resolver service rejected our requests; falling back to system DNS",
                metadata: ["error": "\(failure.message)"]
            )
        }
    }
}
