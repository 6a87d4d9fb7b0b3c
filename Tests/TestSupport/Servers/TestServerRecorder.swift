import NIOCore
import NIOHTTP1

/// What a `TestHTTPServer` saw, plus waiters for conditions on it.
///
/// Confined to the server's single event loop (every handler of the server runs there), so it
/// needs no lock: tests read and wait through `loop.submit` / `loop.execute`.
package final class TestServerRecorder: @unchecked Sendable {
    package struct Request: Sendable {
        package var head: HTTPRequestHead
        package var body: [UInt8]
    }

    /// A copy of the counters for the test's side.
    package struct Snapshot: Sendable {
        package var acceptedConnections: Int
        package var closedConnections: Int
        package var requests: [Request]
    }

    package struct WaitTimedOut: Error, CustomStringConvertible {
        package var what: String
        package var description: String { "timed out waiting for \(what)" }
    }

    private struct Waiter {
        var id: Int
        var condition: @Sendable (Snapshot) -> Bool
        var promise: EventLoopPromise<Void>
        var deadline: Scheduled<Void>
    }

    package let loop: any EventLoop
    private var acceptedConnections = 0
    private var closedConnections = 0
    private var requests: [Request] = []
    private var waiters: [Waiter] = []
    private var nextWaiterID = 0

    package init(loop: any EventLoop) {
        self.loop = loop
    }

    package var snapshot: Snapshot {
        loop.preconditionInEventLoop()
        return Snapshot(acceptedConnections: acceptedConnections, closedConnections: closedConnections, requests: requests)
    }

    package func connectionAccepted() {
        loop.preconditionInEventLoop()
        acceptedConnections += 1
        notifyWaiters()
    }

    package func connectionClosed() {
        loop.preconditionInEventLoop()
        closedConnections += 1
        notifyWaiters()
    }

    package func requestReceived(_ request: Request) {
        loop.preconditionInEventLoop()
        requests.append(request)
        notifyWaiters()
    }

    /// Succeeds `promise` once `condition` holds; fails it with `WaitTimedOut` after `timeout`.
    package func addWaiter(
        _ what: String,
        timeout: TimeAmount,
        promise: EventLoopPromise<Void>,
        condition: @escaping @Sendable (Snapshot) -> Bool
    ) {
        loop.preconditionInEventLoop()
        if condition(snapshot) {
            promise.succeed()
            return
        }
        nextWaiterID += 1
        let id = nextWaiterID
        let deadline = loop.scheduleTask(in: timeout) { [self] in
            waiters.removeAll { $0.id == id }
            promise.fail(WaitTimedOut(what: what))
        }
        waiters.append(Waiter(id: id, condition: condition, promise: promise, deadline: deadline))
    }

    private func notifyWaiters() {
        let current = snapshot
        var pending: [Waiter] = []
        for waiter in waiters {
            if waiter.condition(current) {
                waiter.deadline.cancel()
                waiter.promise.succeed()
            } else {
                pending.append(waiter)
            }
        }
        waiters = pending
    }
}
