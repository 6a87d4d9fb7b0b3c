import NIOCore
import NIOHTTP1

/// What a `TestHTTPServer` saw, plus waiters for conditions on it.
///
/// Confined to the server's single event loop (every handler of the server runs there), so it
/// needs no lock: tests read and wait through `loop.submit` / `loop.execute`.
final class TestServerRecorder: @unchecked Sendable {
    struct Request: Sendable {
        var head: HTTPRequestHead
        var body: [UInt8]
    }

    /// A copy of the counters for the test's side.
    struct Snapshot: Sendable {
        var acceptedConnections: Int
        var closedConnections: Int
        var requests: [Request]
    }

    struct WaitTimedOut: Error, CustomStringConvertible {
        var what: String
        var description: String { "timed out waiting for \(what)" }
    }

    private struct Waiter {
        var id: Int
        var condition: @Sendable (Snapshot) -> Bool
        var promise: EventLoopPromise<Void>
        var deadline: Scheduled<Void>
    }

    let loop: any EventLoop
    private var acceptedConnections = 0
    private var closedConnections = 0
    private var requests: [Request] = []
    private var waiters: [Waiter] = []
    private var nextWaiterID = 0

    init(loop: any EventLoop) {
        self.loop = loop
    }

    var snapshot: Snapshot {
        loop.preconditionInEventLoop()
        return Snapshot(acceptedConnections: acceptedConnections, closedConnections: closedConnections, requests: requests)
    }

    func connectionAccepted() {
        loop.preconditionInEventLoop()
        acceptedConnections += 1
        notifyWaiters()
    }

    func connectionClosed() {
        loop.preconditionInEventLoop()
        closedConnections += 1
        notifyWaiters()
    }

    func requestReceived(_ request: Request) {
        loop.preconditionInEventLoop()
        requests.append(request)
        notifyWaiters()
    }

    /// Succeeds `promise` once `condition` holds; fails it with `WaitTimedOut` after `timeout`.
    func addWaiter(
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
