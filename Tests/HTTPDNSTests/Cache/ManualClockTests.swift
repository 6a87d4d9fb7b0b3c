import Testing

@Suite struct ManualClockTests {
    @Test func sleepersWakeInDeadlineOrderWhenTimeAdvances() async throws {
        let clock = ManualClock()
        let order = OrderRecorder()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for seconds in [30, 10, 20] {
                group.addTask {
                    try await clock.sleep(until: clock.instant(.seconds(seconds)))
                    order.append(seconds)
                }
            }
            for seconds in [10, 20, 30] {
                await clock.waitForSleeper(until: clock.instant(.seconds(seconds)))
            }
            clock.advance(by: .seconds(15))
            try await group.next()
            #expect(order.values == [10])
            clock.advance(by: .seconds(15))
            try await group.waitForAll()
        }
        #expect(Set(order.values) == [10, 20, 30])
        #expect(clock.now == clock.instant(.seconds(30)))
    }

    @Test func sleepingUntilThePastReturnsAtOnce() async throws {
        let clock = ManualClock()
        clock.advance(by: .seconds(5))
        try await clock.sleep(until: clock.instant(.seconds(5)))
        #expect(clock.sleepingDeadlines.isEmpty)
    }

    @Test func cancellingASleeperThrowsAndForgetsIt() async {
        let clock = ManualClock()
        let task = Task { try await clock.sleep(until: clock.instant(.seconds(1))) }
        await clock.waitForSleeper(until: clock.instant(.seconds(1)))
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(clock.sleepingDeadlines.isEmpty)
    }
}

import NIOConcurrencyHelpers

final class OrderRecorder: Sendable {
    private let box = NIOLockedValueBox<[Int]>([])
    func append(_ value: Int) { box.withLockedValue { $0.append(value) } }
    var values: [Int] { box.withLockedValue { $0 } }
}
