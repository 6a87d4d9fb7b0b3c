/// An HTTP(S) client for the proxy's own calls to HTTPDNS resolvers, built on libcurl.
///
/// One libcurl multi handle, driven by a dedicated thread, runs every transfer: callers never
/// block, and connections (and pinned addresses) are shared across requests, so repeated lookups
/// to a resolver reuse its connection.
public final class CurlTransport: Sendable {
    let engine: CurlTransferEngine?
    /// Why the transport could not start (libcurl or the system refused); every send throws it.
    private let startFailure: CurlTransportError?

    /// - Parameters:
    ///   - maxConnections: Connections open at once across all hosts; further requests wait in
    ///     libcurl's queue (their `timeout` keeps running). Also the size of the idle-connection cache.
    ///   - userAgent: Sent as `User-Agent` unless a request sets its own.
    public init(maxConnections: Int = 16, userAgent: String = "httpdns-proxy") {
        do {
            let engine = try CurlTransferEngine(maxConnections: maxConnections, userAgent: userAgent)
            try engine.start()
            self.engine = engine
            self.startFailure = nil
        } catch {
            self.engine = nil
            self.startFailure = error
        }
    }

    deinit {
        engine?.shutdown()
    }

    /// Never blocks the caller's thread; cancellation-aware (cancelling the task removes the
    /// transfer and throws CancellationError).
    ///
    /// - Throws: `CurlTransportError` for every failure of the request itself, `CancellationError`
    ///   when the calling task is cancelled. Non-2xx statuses are responses, not errors.
    public func send(_ request: CurlRequest) async throws -> CurlResponse {
        guard let engine else {
            throw startFailure ?? CurlTransportError(kind: .other, detail: "transport failed to start")
        }
        try Task.checkCancellation()
        let transfer = try CurlEasyTransfer(id: engine.nextID(), request: request, userAgent: engine.userAgent)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                transfer.continuation = continuation
                engine.submit(transfer)
            }
        } onCancel: {
            engine.cancel(transfer.id)
        }
    }

    /// Idempotent; in-flight and later requests fail with the shutdown error. Returns once the
    /// loop thread has ended and the cached connections are closed (briefly blocking the caller).
    public func shutdown() {
        engine?.shutdown()
    }
}
