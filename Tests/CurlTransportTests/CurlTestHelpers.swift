import CurlTransport
import Testing
import TestSupport

/// Runs `body` with a fresh transport, shut down afterwards whatever happens.
func withTransport<T>(
    maxConnections: Int = 16,
    _ body: (CurlTransport) async throws -> T
) async throws -> T {
    let transport = CurlTransport(maxConnections: maxConnections)
    defer { transport.shutdown() }
    return try await body(transport)
}

/// A request to `server`'s `path` via `http://localhost:PORT`, pinned to `pins` (default: the
/// server's own address), so libcurl never resolves the name itself.
func request(
    _ server: TestHTTPServer,
    _ path: String,
    pinnedTo pins: [String]? = nil,
    timeout: Duration = .seconds(10)
) -> CurlRequest {
    var request = CurlRequest(url: server.url(path))
    request.pinnedAddresses = pins ?? [server.address]
    request.timeout = timeout
    return request
}

/// A loopback address no test server binds (test servers use 127.0.0.1-3), for dead pins.
let deadAddress = "127.0.0.66"

/// The transport error thrown by `operation`, or nil with a test failure if it threw none or another.
func transportError(
    _ operation: () async throws -> CurlResponse
) async -> CurlTransportError? {
    do {
        let response = try await operation()
        Issue.record("expected an error, got status \(response.status)")
        return nil
    } catch let error as CurlTransportError {
        return error
    } catch {
        Issue.record("expected CurlTransportError, got \(error)")
        return nil
    }
}
