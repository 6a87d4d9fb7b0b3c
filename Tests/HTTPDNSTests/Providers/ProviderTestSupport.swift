import CurlTransport
import HTTPDNS
import Logging
import TestSupport

/// A resolver client aimed at a fake service: the URL names `localhost` (so nothing could leave the
/// machine even if pinning broke) and is pinned to the given loopback addresses. The timeout is a
/// ceiling no test waits out unless it asks for one (dead addresses refuse at once on loopback):
/// generous, since in a parallel run the fake services share their event loops with busy tests.
func makeClient(
    _ transport: CurlTransport,
    pins: [String],
    timeout: Duration = fakeServiceTimeout,
    now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }
) -> ResolverClient {
    ResolverClient(
        transport: transport,
        servers: ResolverServers(ips: pins, now: now),
        timeout: timeout,
        caFile: nil,
        logger: Logger(label: "test")
    )
}

func localURL(_ service: FakeHTTPDNSService, _ path: String) -> String {
    "http://localhost:\(service.port)\(path)"
}

/// A settable monotonic instant for back-off tests.
final class ManualInstant: @unchecked Sendable {
    private let lock = NSLockShim()
    private var value = ContinuousClock.now

    var now: ContinuousClock.Instant { lock.withLock { value } }

    func advance(by duration: Duration) {
        lock.withLock { value = value.advanced(by: duration) }
    }
}

import Foundation

struct NSLockShim {
    private let lock = NSLock()
    func withLock<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }
}

/// How long a query to a fake service may take before it fails (see `makeClient`).
let fakeServiceTimeout: Duration = .seconds(30)
