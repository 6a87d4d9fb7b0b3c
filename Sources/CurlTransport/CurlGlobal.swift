import CCurl

/// curl_global_init is not thread-safe and must run once per process before any other libcurl
/// call; a Swift global's lazy initialiser runs exactly once, under the runtime's own lock.
/// curl_global_cleanup is never called: other libraries in the process may still use libcurl.
private let curlGlobalInitResult: CURLcode = ccurl_global_init_default()

enum CurlGlobal {
    /// Runs curl_global_init on first use; nil on success, else libcurl's reason.
    static func initialize() -> String? {
        let code = curlGlobalInitResult
        guard code != CURLE_OK else { return nil }
        return String(cString: curl_easy_strerror(code))
    }
}
