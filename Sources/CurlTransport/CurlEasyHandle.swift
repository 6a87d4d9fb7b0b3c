import CCurl

/// Owns a libcurl easy handle and the error buffer libcurl writes its detailed messages into.
/// All setopt/getinfo calls go through CCurl's typed shims (the real functions are variadic).
final class CurlEasyHandle {
    let pointer: UnsafeMutableRawPointer
    private let errorBuffer: UnsafeMutablePointer<CChar>

    init() throws(CurlTransportError) {
        guard let pointer = curl_easy_init() else {
            throw CurlTransportError(kind: .other, detail: "curl_easy_init failed")
        }
        self.pointer = pointer
        let size = Int(CURL_ERROR_SIZE)
        errorBuffer = .allocate(capacity: size)
        errorBuffer.initialize(repeating: 0, count: size)
        // Cannot fail: a plain pointer option, checked only for NULL handles.
        _ = ccurl_easy_setopt_pointer(pointer, CURLOPT_ERRORBUFFER, errorBuffer)
    }

    private var isClosed = false

    deinit {
        close()
        errorBuffer.deinitialize(count: Int(CURL_ERROR_SIZE))
        errorBuffer.deallocate()
    }

    /// Frees the handle now rather than whenever the last reference goes: the loop closes handles
    /// that were in the multi handle on its own thread. Idempotent; nothing else may be called after.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        // Before the buffer goes (deinit): until cleanup libcurl may still write into it.
        curl_easy_cleanup(pointer)
    }

    /// libcurl's detailed message for the last failure, or "" when it wrote none.
    var errorMessage: String {
        String(cString: errorBuffer)
    }

    func set(_ option: CURLoption, _ value: Int) throws(CurlTransportError) {
        try check(ccurl_easy_setopt_long(pointer, option, value), option)
    }

    func set(_ option: CURLoption, offset value: Int64) throws(CurlTransportError) {
        try check(ccurl_easy_setopt_off_t(pointer, option, curl_off_t(value)), option)
    }

    /// String options are copied by libcurl, so `value` need not outlive the call.
    func set(_ option: CURLoption, _ value: String) throws(CurlTransportError) {
        try check(ccurl_easy_setopt_string(pointer, option, value), option)
    }

    /// The list is not copied: the caller keeps it alive as long as this handle.
    func set(_ option: CURLoption, _ list: CurlStringList) throws(CurlTransportError) {
        try check(ccurl_easy_setopt_slist(pointer, option, list.pointer), option)
    }

    func set(_ option: CURLoption, _ pointerValue: UnsafeMutableRawPointer?) throws(CurlTransportError) {
        try check(ccurl_easy_setopt_pointer(pointer, option, pointerValue), option)
    }

    func set(_ option: CURLoption, _ callback: curl_write_callback) throws(CurlTransportError) {
        try check(ccurl_easy_setopt_write_callback(pointer, option, callback), option)
    }

    /// SO_MARK on every connection socket of this handle.
    func setSocketMark(_ mark: UInt32) throws(CurlTransportError) {
        try check(ccurl_easy_set_socket_mark(pointer, mark), CURLOPT_SOCKOPTFUNCTION)
    }

    /// CURLOPT_COPYPOSTFIELDS with binary data: libcurl copies `bytes` (size set first).
    func setPostBody(_ bytes: [UInt8]) throws(CurlTransportError) {
        try set(CURLOPT_POSTFIELDSIZE_LARGE, offset: Int64(bytes.count))
        let code = bytes.withUnsafeBytes { raw -> CURLcode in
            // An empty array may have no base address; libcurl needs a valid pointer either way.
            if let base = raw.baseAddress, !raw.isEmpty {
                return ccurl_easy_setopt_bytes(pointer, CURLOPT_COPYPOSTFIELDS, base)
            }
            return ccurl_easy_setopt_string(pointer, CURLOPT_COPYPOSTFIELDS, "")
        }
        try check(code, CURLOPT_COPYPOSTFIELDS)
    }

    func infoLong(_ info: CURLINFO) -> Int? {
        var value = 0
        return ccurl_easy_getinfo_long(pointer, info, &value) == CURLE_OK ? value : nil
    }

    func infoString(_ info: CURLINFO) -> String? {
        var value: UnsafePointer<CChar>? = nil
        guard ccurl_easy_getinfo_string(pointer, info, &value) == CURLE_OK, let value else { return nil }
        return String(cString: value)
    }

    func infoOffset(_ info: CURLINFO) -> Int64? {
        var value: curl_off_t = 0
        return ccurl_easy_getinfo_off_t(pointer, info, &value) == CURLE_OK ? Int64(value) : nil
    }

    private func check(_ code: CURLcode, _ option: CURLoption) throws(CurlTransportError) {
        guard code != CURLE_OK else { return }
        // An unknown option means the installed libcurl is older than this code expects.
        throw CurlTransportError(
            kind: .other,
            detail: "curl_easy_setopt(option \(option.rawValue)) failed: \(String(cString: curl_easy_strerror(code)))",
            curlCode: Int(code.rawValue)
        )
    }
}
