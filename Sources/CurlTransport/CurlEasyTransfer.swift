import CCurl

/// One request in flight: its easy handle, the lists the handle points at, the response collected
/// so far, and the continuation to resume.
///
/// Owned by one thread at a time (the submitter until the transfer is queued, then the loop
/// thread; the submitter again only if it cancels before the loop took it), hence @unchecked Sendable.
final class CurlEasyTransfer: @unchecked Sendable {
    let id: UInt64
    let easy: CurlEasyHandle
    let target: RequestTarget
    let maxResponseBytes: Int
    var continuation: CheckedContinuation<CurlResponse, any Error>?

    /// Lists handed to libcurl by pointer; kept here so they outlive the easy handle's use of them.
    var lists: [CurlStringList] = []
    var body: [UInt8] = []
    var headers: [(name: String, value: String)] = []
    /// Set when the write callback refused data beyond `maxResponseBytes`.
    var exceededLimit = false

    /// Validates `request` and prepares the easy handle; nothing touches the network yet.
    init(id: UInt64, request: CurlRequest, userAgent: String) throws(CurlTransportError) {
        self.id = id
        self.target = try RequestTarget(url: request.url)
        self.maxResponseBytes = max(0, request.maxResponseBytes)
        self.easy = try CurlEasyHandle()
        try configure(request, userAgent: userAgent)
    }

    deinit {
        // Explicitly before `lists` go: the easy handle points at them.
        easy.close()
    }

    /// Hands the result to the waiting task. Called once, by whichever thread owns the transfer.
    func finish(_ result: Result<CurlResponse, any Error>) {
        let continuation = self.continuation
        self.continuation = nil
        continuation?.resume(with: result)
    }
}
