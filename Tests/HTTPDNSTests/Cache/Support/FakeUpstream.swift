import NIOConcurrencyHelpers

@testable import HTTPDNS

/// An in-memory HTTPDNS service: answers from a table, counts calls, and can be made to stall
/// (queries suspend until `release()`, no sleeping) or fail.
final class FakeUpstream: Sendable {
    private struct CallWaiter {
        var count: Int
        var continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var results: [String: Result<ResolvedAnswer, ResolveFailure>] = [:]
        var defaultTTL: Duration = .seconds(60)
        var calls: [String] = []
        var batchCalls: [[String]] = []
        var stalled = false
        var gated: [(id: Int, continuation: CheckedContinuation<Void, any Error>)] = []
        var nextGateID = 0
        var callWaiters: [CallWaiter] = []

        var totalCalls: Int { calls.count + batchCalls.count }
    }

    private let state = NIOLockedValueBox(State())

    init(defaultTTL: Duration = .seconds(60)) {
        state.withLockedValue { $0.defaultTTL = defaultTTL }
    }

    /// `name` answers `result` from now on; unknown names get `answer(for:)` with the default TTL.
    func set(_ name: String, _ result: Result<ResolvedAnswer, ResolveFailure>) {
        state.withLockedValue { $0.results[name] = result }
    }

    func set(_ name: String, ipv4: String, ttl: Duration) {
        set(name, .success(ResolvedAnswer(ipv4: [ipv4], ipv6: [], ttl: ttl, serverIP: "203.0.113.1")))
    }

    func fail(_ name: String, _ kind: ResolveFailure.Kind, negativeTTL: Duration? = nil) {
        set(name, .failure(ResolveFailure(kind: kind, message: "fake \(kind.description)", negativeTTL: negativeTTL)))
    }

    static func defaultAnswer(for name: String, ttl: Duration) -> ResolvedAnswer {
        ResolvedAnswer(ipv4: ["192.0.2.\(name.utf8.count % 250 + 1)"], ipv6: ["2001:db8::1"], ttl: ttl, serverIP: "203.0.113.1")
    }

    /// Queries suspend until `release()`.
    func stall() {
        state.withLockedValue { $0.stalled = true }
    }

    /// Lets every stalled query (and later ones) through.
    func release() {
        let gated = state.withLockedValue { state in
            state.stalled = false
            defer { state.gated.removeAll() }
            return state.gated.map(\.continuation)
        }
        gated.forEach { $0.resume() }
    }

    var calls: [String] { state.withLockedValue { $0.calls } }
    var batchCalls: [[String]] { state.withLockedValue { $0.batchCalls } }

    func callCount(_ name: String) -> Int {
        state.withLockedValue { $0.calls.filter { $0 == name }.count }
    }

    /// Returns once single plus batch calls reach `count`.
    func waitForCalls(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let reached = state.withLockedValue { state -> Bool in
                if state.totalCalls >= count { return true }
                state.callWaiters.append(CallWaiter(count: count, continuation: continuation))
                return false
            }
            if reached { continuation.resume() }
        }
    }

    // MARK: The query functions handed to the resolver

    var query: @Sendable (String) async throws -> ResolvedAnswer {
        { name in try await self.answer(name) }
    }

    var batchQuery: @Sendable ([String]) async throws -> [String: Result<ResolvedAnswer, ResolveFailure>] {
        { names in try await self.answerBatch(names) }
    }

    private func answer(_ name: String) async throws -> ResolvedAnswer {
        try await record { $0.calls.append(name) }
        return try result(for: name).get()
    }

    private func answerBatch(_ names: [String]) async throws -> [String: Result<ResolvedAnswer, ResolveFailure>] {
        try await record { $0.batchCalls.append(names) }
        var answers: [String: Result<ResolvedAnswer, ResolveFailure>] = [:]
        for name in names {
            answers[name] = result(for: name)
        }
        return answers
    }

    private func result(for name: String) -> Result<ResolvedAnswer, ResolveFailure> {
        state.withLockedValue { state in
            state.results[name] ?? .success(Self.defaultAnswer(for: name, ttl: state.defaultTTL))
        }
    }

    /// Counts the call, wakes waiters, then holds the call while stalled (cancellable, so a
    /// stopping resolver is not held up).
    private func record(_ update: @Sendable (inout State) -> Void) async throws {
        let (waiters, stalled, gateID) = state.withLockedValue { state in
            update(&state)
            let total = state.totalCalls
            let ready = state.callWaiters.filter { $0.count <= total }.map(\.continuation)
            state.callWaiters.removeAll { $0.count <= total }
            defer { state.nextGateID += 1 }
            return (ready, state.stalled, state.nextGateID)
        }
        waiters.forEach { $0.resume() }
        guard stalled else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resumeNow = state.withLockedValue { state -> Bool in
                    if !state.stalled { return true }
                    if Task.isCancelled { return true }
                    state.gated.append((gateID, continuation))
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let gate = state.withLockedValue { state -> CheckedContinuation<Void, any Error>? in
                guard let index = state.gated.firstIndex(where: { $0.id == gateID }) else { return nil }
                return state.gated.remove(at: index).continuation
            }
            gate?.resume(throwing: CancellationError())
        }
        try Task.checkCancellation()
    }
}
