import NIOConcurrencyHelpers

/// Opens once, when a provider's first load attempt has ended (loaded or failed). Callers that
/// arrive before wait for it, up to a limit, instead of failing at once: a proxy that starts
/// listening while its static list is still being fetched answers its first requests anyway.
final class FirstLoadGate: Sendable {
    private struct State {
        var open = false
        var nextID = 0
        var waiters: [(id: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = NIOLockedValueBox(State())

    var isOpen: Bool { state.withLockedValue { $0.open } }

    /// Callers waiting now (tests line up on it).
    var waiterCount: Int { state.withLockedValue { $0.waiters.count } }

    func open() {
        let waiters = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters.map(\.continuation)
        }
        waiters.forEach { $0.resume() }
    }

    /// Returns when the gate opens or `limit` has passed (or the task is cancelled).
    func wait(atMost limit: Duration) async {
        guard !isOpen else { return }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.waitUntilOpen() }
            group.addTask { try? await Task.sleep(for: limit) }
            await group.next()
            group.cancelAll()
        }
    }

    private func waitUntilOpen() async {
        let id = state.withLockedValue { state -> Int in
            defer { state.nextID += 1 }
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLockedValue { state -> Bool in
                    if state.open || Task.isCancelled { return true }
                    state.waiters.append((id, continuation))
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index).continuation
            }
            waiter?.resume()
        }
    }
}
