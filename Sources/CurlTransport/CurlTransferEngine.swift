import CCurl
import NIOConcurrencyHelpers

/// The shared state between callers of `CurlTransport` and the loop thread that drives the multi
/// handle. Callers only touch the lock-protected `State` and wake the loop; only the loop thread
/// calls into the multi handle otherwise.
final class CurlTransferEngine: Sendable {
    struct State {
        var nextID: UInt64 = 0
        /// Submitted, not yet taken by the loop: cancelling one resumes it right away.
        var incoming: [CurlEasyTransfer] = []
        /// Transfers the loop owns; a cancellation for one of these is queued for the loop.
        var active: Set<UInt64> = []
        var cancellations: [UInt64] = []
        /// Once set, nobody wakes the multi handle again, which lets the loop free it on exit.
        var isShutdown = false
    }

    let state = NIOLockedValueBox(State())
    let multi: CurlMultiHandle
    let userAgent: String
    /// The loop thread; nil until started, or when it could not be started.
    private let thread = NIOLockedValueBox<LoopThread?>(nil)
    private let loopRunning = NIOLockedValueBox(false)

    init(maxConnections: Int, userAgent: String) throws(CurlTransportError) {
        if let failure = CurlGlobal.initialize() {
            throw CurlTransportError(kind: .other, detail: "curl_global_init failed: \(failure)")
        }
        self.multi = try CurlMultiHandle(maxConnections: maxConnections)
        self.userAgent = userAgent
    }

    /// Starts the loop thread; separate from init because the thread must capture `self`.
    func start() throws(CurlTransportError) {
        loopRunning.withLockedValue { $0 = true }
        do {
            let loop = try LoopThread { [self] in
                self.runLoop()
                self.loopRunning.withLockedValue { $0 = false }
            }
            thread.withLockedValue { $0 = loop }
        } catch {
            loopRunning.withLockedValue { $0 = false }
            throw error
        }
    }

    func nextID() -> UInt64 {
        state.withLockedValue { state in
            state.nextID += 1
            return state.nextID
        }
    }

    /// Queues `transfer` for the loop, or finishes it at once when cancelled or shut down.
    func submit(_ transfer: CurlEasyTransfer) {
        enum Outcome { case queued, cancelled, shutdown }
        let outcome = state.withLockedValue { state -> Outcome in
            if state.isShutdown { return .shutdown }
            // Task cancellation sets the flag before running onCancel, and onCancel takes this
            // lock: so either we see the flag here, or `cancel` finds the transfer in `incoming`.
            if Task.isCancelled { return .cancelled }
            state.incoming.append(transfer)
            multi.wakeup()
            return .queued
        }
        switch outcome {
        case .queued: break
        case .cancelled: transfer.finish(.failure(CancellationError()))
        case .shutdown: transfer.finish(.failure(Self.shutdownError(transfer.target)))
        }
    }

    /// Cancels transfer `id` wherever it is; a no-op when it already finished.
    func cancel(_ id: UInt64) {
        let taken = state.withLockedValue { state -> CurlEasyTransfer? in
            if let index = state.incoming.firstIndex(where: { $0.id == id }) {
                return state.incoming.remove(at: index)
            }
            // After shutdown the loop fails everything it owns anyway, and must not be woken.
            if state.active.contains(id) && !state.isShutdown {
                state.cancellations.append(id)
                multi.wakeup()
            }
            return nil
        }
        taken?.finish(.failure(CancellationError()))
    }

    /// Stops the loop, failing queued and in-flight transfers, and waits for the thread to end.
    /// Idempotent; safe to call concurrently.
    func shutdown() {
        let drained = state.withLockedValue { state -> [CurlEasyTransfer] in
            guard !state.isShutdown else { return [] }
            state.isShutdown = true
            multi.wakeup()
            let drained = state.incoming
            state.incoming = []
            return drained
        }
        for transfer in drained {
            transfer.finish(.failure(Self.shutdownError(transfer.target)))
        }
        thread.withLockedValue { $0 }?.join()
    }

    static func shutdownError(_ target: RequestTarget) -> CurlTransportError {
        CurlTransportError(kind: .shutdown, detail: "\(target.redactedURL): transport is shut down")
    }

    /// True from `start` until the loop thread's body returned (tests: shutdown leaves no thread behind).
    var isLoopRunning: Bool {
        loopRunning.withLockedValue { $0 }
    }
}
