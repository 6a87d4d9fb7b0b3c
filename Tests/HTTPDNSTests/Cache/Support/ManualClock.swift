import NIOConcurrencyHelpers

/// A clock that only moves when the test says so. `sleep(until:)` suspends until `advance(by:)`
/// passes the deadline; due sleepers are resumed in deadline order, ties in the order they went
/// to sleep. `waitForSleeper(until:)` lets a test wait until background code has gone to sleep.
final class ManualClock: Clock, Sendable {
    struct Instant: InstantProtocol, CustomStringConvertible {
        /// Time since the clock's start.
        var offset: Duration

        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
        var description: String { "t+\(offset)" }
    }

    private struct Sleeper {
        var id: UInt64
        var deadline: Instant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct SleeperWatcher {
        var deadline: Instant
        var continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var nextID: UInt64 = 0
        var sleepers: [Sleeper] = []
        var watchers: [SleeperWatcher] = []
    }

    private let state = NIOLockedValueBox(State())

    var now: Instant { state.withLockedValue { $0.now } }
    var minimumResolution: Duration { .zero }

    /// The start instant advanced by `duration`.
    func instant(_ duration: Duration) -> Instant { Instant(offset: duration) }

    func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLockedValue { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Outcome { case done, cancelled, sleeping([CheckedContinuation<Void, Never>]) }
                let outcome = state.withLockedValue { state -> Outcome in
                    if deadline <= state.now { return .done }
                    if Task.isCancelled { return .cancelled }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    let matched = state.watchers.filter { $0.deadline == deadline }.map(\.continuation)
                    state.watchers.removeAll { $0.deadline == deadline }
                    return .sleeping(matched)
                }
                switch outcome {
                case .done: continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .sleeping(let watchers): watchers.forEach { $0.resume() }
                }
            }
        } onCancel: {
            let sleeper = state.withLockedValue { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward and wakes every sleeper whose deadline has come.
    func advance(by duration: Duration) {
        precondition(duration >= .zero, "time only moves forward")
        let due = state.withLockedValue { state -> [Sleeper] in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }
                .sorted { ($0.deadline, $0.id) < ($1.deadline, $1.id) }
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in due {
            sleeper.continuation.resume()
        }
    }

    /// Returns once some task sleeps until exactly `deadline` (immediately if one does already).
    func waitForSleeper(until deadline: Instant) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let sleeping = state.withLockedValue { state -> Bool in
                if state.sleepers.contains(where: { $0.deadline == deadline }) { return true }
                state.watchers.append(SleeperWatcher(deadline: deadline, continuation: continuation))
                return false
            }
            if sleeping { continuation.resume() }
        }
    }

    /// Deadlines of the tasks currently asleep, earliest first.
    var sleepingDeadlines: [Instant] {
        state.withLockedValue { $0.sleepers.map(\.deadline).sorted() }
    }
}
