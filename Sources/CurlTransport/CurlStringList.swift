import CCurl

/// Owns a `curl_slist`. libcurl does not copy lists passed to setopt (CURLOPT_HTTPHEADER,
/// CURLOPT_RESOLVE), so the owner must keep this alive until the easy handle is cleaned up.
final class CurlStringList {
    private(set) var pointer: UnsafeMutablePointer<curl_slist>?

    init(_ strings: [String]) throws(CurlTransportError) {
        for string in strings {
            guard let appended = curl_slist_append(pointer, string) else {
                // On failure libcurl leaves the existing list intact; deinit frees it.
                throw CurlTransportError(kind: .other, detail: "out of memory building a libcurl list")
            }
            pointer = appended
        }
    }

    deinit {
        curl_slist_free_all(pointer)
    }
}
