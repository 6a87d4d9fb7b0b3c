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

    private let queue = JobQueue()

    private init(count: Int) {
        for index in 0..<count {
            let thread = Thread { [self] in queue.serve(on: asUnownedTaskExecutor()) }
            thread.name = "e2e-blocking-\(index)"
            thread.start()
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        queue.push(UnownedJob(job))
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

/// One thread of its own as a task executor: a task preferring it runs every synchronous stretch
/// there. Made for work that must happen on a particular kind of thread (one that joined a network
/// namespace: sockets are created in the namespace of the thread that creates them) or that blocks
/// while the test goes on (a raw sender beside a reading test). `finish()` ends the thread once the
/// queue is empty.
final class OneThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let queue = JobQueue()

    /// Starts the thread; `prepare` runs on it first (its error is thrown here, and the thread ends).
    private static func start(name: String, prepare: @escaping @Sendable () throws -> Void = {}) async throws -> OneThreadExecutor {
        let executor = OneThreadExecutor()
        try await withCheckedThrowingContinuation { (started: CheckedContinuation<Void, any Error>) in
            let thread = Thread {
                do {
                    try prepare()
                } catch {
                    started.resume(throwing: error)
                    return
                }
                started.resume()
                executor.queue.serve(on: executor.asUnownedTaskExecutor())
            }
            thread.name = name
            thread.start()
        }
        return executor
    }

    /// Runs `body` on a new thread of its own (with `prepare` first) and returns its result.
    static func run<T: Sendable>(
        name: String, prepare: @escaping @Sendable () throws -> Void = {}, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let executor = try await start(name: name, prepare: prepare)
        defer { executor.finish() }
        return try await withTaskExecutorPreference(executor) { try await body() }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        queue.push(UnownedJob(job))
    }

    /// Lets the thread end once it has run what is queued.
    func finish() {
        queue.finish()
    }
}

/// The jobs of a task executor whose threads are its own: each thread runs `serve(on:)`.
private final class JobQueue: @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var finished = false

    func push(_ job: UnownedJob) {
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Serving threads return once the queue is empty.
    func finish() {
        condition.lock()
        finished = true
        condition.broadcast()
        condition.unlock()
    }

    /// Runs jobs on the calling thread, waiting for the next one, until `finish()` and an empty queue.
    func serve(on executor: UnownedTaskExecutor) {
        while true {
            condition.lock()
            while jobs.isEmpty && !finished { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: executor)
        }
    }
}
