import NIOConcurrencyHelpers
import NIOPosix

/// A thread pool whose threads exist only once a feature that needs them is on: the proxy-auth
/// hashing threads start with the first configuration (at start or on reload) that asks for
/// authentication, so a proxy without it has no idle threads for it.
package final class OnDemandThreadPool: Sendable {
    package let pool: NIOThreadPool
    private let started = NIOLockedValueBox(false)

    package init(numberOfThreads: Int) {
        pool = NIOThreadPool(numberOfThreads: numberOfThreads)
    }

    var isStarted: Bool { started.withLockedValue { $0 } }

    /// Starts the threads the first time; later calls do nothing.
    package func start() {
        let first = started.withLockedValue { value -> Bool in
            defer { value = true }
            return !value
        }
        if first { pool.start() }
    }

    package func shutdownGracefully() async {
        guard isStarted else { return }
        try? await pool.shutdownGracefully()
    }
}
