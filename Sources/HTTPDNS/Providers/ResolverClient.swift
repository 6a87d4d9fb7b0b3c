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
        guard case .go(var order) = servers.admit() else {
            throw ResolveFailure(kind: .network, message: "resolver service unreachable recently; backing off", negativeTTL: nil)
        }
        var request = try makeRequest()
        request.timeout = timeout
        request.caFile = caFile
        var lastFailure = ResolveFailure(kind: .network, message: "no resolver server answered", negativeTTL: nil)
        for _ in 0..<max(order.count, 1) {
            request.pinnedAddresses = order
            let response: CurlResponse
            do {
                response = try await transport.send(request)
            } catch let error as CurlTransportError {
                if error.isConnectFailure {
                    // libcurl already tried every pinned address in order.
                    servers.failed(ip: nil, wholeRotation: true)
                    throw ResolveFailure(kind: .network, message: "resolver service: \(error)", negativeTTL: nil)
                }
                lastFailure = ResolveFailure(kind: error.isTimeout ? .timeout : .network, message: "resolver service: \(error)", negativeTTL: nil)
                if servers.failed(ip: order.first) { break }
                order = ResolverServers.rotated(order, from: 1)
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
                servers.succeeded(ip: response.remoteIP)
                var answer = answer
                answer.serverIP = response.remoteIP
                return answer
            case .fail(let failure):
                if failure.kind == .auth {
                    servers.neutral()
                    logOnce(failure)
                } else {
                    servers.succeeded(ip: response.remoteIP)
                }
                throw failure
            case .nextServer(let why):
                lastFailure = ResolveFailure(kind: .server, message: why, negativeTTL: nil)
                if servers.failed(ip: response.remoteIP ?? order.first) { break }
                if let ip = response.remoteIP, let index = order.firstIndex(of: ip) {
                    order = ResolverServers.rotated(order, from: index + 1)
                } else {
                    order = ResolverServers.rotated(order, from: 1)
                }
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
