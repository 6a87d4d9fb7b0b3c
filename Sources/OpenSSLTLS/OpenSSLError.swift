import COpenSSL

/// Reads (and clears) this thread's OpenSSL error queue: the most specific reason string, if any.
func drainOpenSSLErrorQueue() -> String? {
    var last: String?
    while true {
        let code = ERR_get_error()
        if code == 0 { break }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        // "error:0A000086:SSL routines::certificate verify failed" → keep the reason part.
        let full = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if let reason = ERR_reason_error_string(code) {
            last = String(cString: reason)
        } else {
            last = full
        }
    }
    return last
}

/// The human string for an X509 verification result, e.g. "hostname mismatch".
func verifyResultString(_ result: Int) -> String {
    guard let cString = X509_verify_cert_error_string(result) else { return "verification error \(result)" }
    return String(cString: cString)
}
