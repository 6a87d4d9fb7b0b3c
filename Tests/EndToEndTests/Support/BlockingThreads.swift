import Foundation
import Testing

/// Threads of their own for the end-to-end tests, whose helpers block (a child process's exit, a
/// log line, a raw socket): a blocked cooperative thread is one the whole test process loses, and
/// with two cores the cooperative pool is two threads wide, so two such tests in parallel would
/// starve every async test (its server replies arrive, but nothing runs to read them). Each test
/// of a suite marked `.onBlockingThreads` runs its task on these threads instead, so tests run in
/// parallel and the cooperative pool stays free.
final class BlockingThreads: TaskExecutor, @unchecked Sendable {
    /// Four tests at a time: each drives a proxy process, so more would only queue on the cores.
    static let shared = BlockingThreads(count: 4)

    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    private init(count: Int) {
        for index in 0..<count {
            let thread = Thread { [self] in work() }
            thread.name = "e2e-blocking-\(index)"
            thread.start()
        }
    }

    private func work() {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }
}

/// Runs each test of the suite (and the tasks it starts) on `BlockingThreads`.
struct OnBlockingThreads: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        guard testCase != nil else { return try await function() }
        try await withTaskExecutorPreference(BlockingThreads.shared) { try await function() }
    }
}

extension Trait where Self == OnBlockingThreads {
    /// The suite's tests block threads: they run on threads of their own (`BlockingThreads`).
    static var onBlockingThreads: Self { OnBlockingThreads() }
}
