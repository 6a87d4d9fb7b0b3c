import CCurl

/// Owns a libcurl URL handle (CURLU). Requests are split with libcurl's own parser so the host
/// and port we pin with CURLOPT_RESOLVE are exactly the ones libcurl will look up.
final class CurlURLHandle {
    private let handle: OpaquePointer

    /// Nil when libcurl cannot parse `url`.
    init?(_ url: String) {
        guard let handle = curl_url() else { return nil }
        self.handle = handle
        // Fully initialised from here on, so a nil return still runs deinit and frees the handle.
        guard curl_url_set(handle, CURLUPART_URL, url, 0) == CURLUE_OK else { return nil }
    }

    deinit {
        curl_url_cleanup(handle)
    }

    /// One component, or nil when the URL has none. `defaultPort` fills in 80/443 for the scheme.
    func part(_ part: CURLUPart, defaultPort: Bool = false) -> String? {
        var out: UnsafeMutablePointer<CChar>? = nil
        let flags: UInt32 = defaultPort ? UInt32(CURLU_DEFAULT_PORT) : 0
        guard curl_url_get(handle, part, &out, flags) == CURLUE_OK, let out else { return nil }
        defer { curl_free(out) }
        return String(cString: out)
    }
}
