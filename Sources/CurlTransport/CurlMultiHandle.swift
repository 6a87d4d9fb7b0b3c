import CCurl

/// Owns a libcurl multi handle, whose connection cache and DNS cache are shared by every transfer
/// added to it: that sharing is what gives connection reuse to the resolver across requests.
///
/// Thread rules: everything but `wakeup()` is called on the loop thread only. `wakeup()` may be
/// called from any thread (libcurl allows that) but never after the loop has called `close()`;
/// `CurlTransferEngine` guarantees this by only waking the loop before it has been told to stop.
final class CurlMultiHandle: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer
    private var isClosed = false

    init(maxConnections: Int) throws(CurlTransportError) {
        guard let pointer = curl_multi_init() else {
            throw CurlTransportError(kind: .other, detail: "curl_multi_init failed")
        }
        self.pointer = pointer
        let limit = max(1, maxConnections)
        // Total open connections (excess transfers queue inside libcurl) and the size of the
        // idle-connection cache, so every connection may stay around for reuse.
        _ = ccurl_multi_setopt_long(pointer, CURLMOPT_MAX_TOTAL_CONNECTIONS, limit)
        _ = ccurl_multi_setopt_long(pointer, CURLMOPT_MAXCONNECTS, limit)
    }

    deinit {
        close()
    }

    /// Frees the handle and closes its cached connections. Idempotent; loop thread (or deinit) only.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        curl_multi_cleanup(pointer)
    }

    func add(_ easy: CurlEasyHandle) -> CURLMcode {
        curl_multi_add_handle(pointer, easy.pointer)
    }

    func remove(_ easy: CurlEasyHandle) {
        _ = curl_multi_remove_handle(pointer, easy.pointer)
    }

    /// Makes a blocked (or the next) `poll` return at once.
    func wakeup() {
        _ = curl_multi_wakeup(pointer)
    }

    /// Drives all transfers as far as they can go without blocking.
    func perform() -> CURLMcode {
        var running: Int32 = 0
        return curl_multi_perform(pointer, &running)
    }

    /// Waits for socket activity, libcurl's next internal timeout, a wakeup, or `timeoutMilliseconds`.
    func poll(timeoutMilliseconds: Int32) -> CURLMcode {
        var ready: Int32 = 0
        return curl_multi_poll(pointer, nil, 0, timeoutMilliseconds, &ready)
    }

    /// Completed transfers since the last call, as (easy handle pointer, result).
    func completedTransfers() -> [(easy: UnsafeMutableRawPointer, result: CURLcode)] {
        var done: [(easy: UnsafeMutableRawPointer, result: CURLcode)] = []
        var remaining: Int32 = 0
        // The message memory belongs to libcurl and is invalidated by remove_handle, so copy first.
        while let message = curl_multi_info_read(pointer, &remaining) {
            if message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle {
                done.append((easy, ccurl_msg_result(message)))
            }
        }
        return done
    }
}
