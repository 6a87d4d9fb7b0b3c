import CCurl
import Glibc

/// libcurl's built-in trust-anchor directory when it is hashed (`openssl rehash` names): then the
/// system store is read from it one anchor at a time instead of loading the whole bundle file into
/// every connection's TLS context (about 140 certificates, 0.8 MiB of heap). Nil when libcurl has
/// no directory or it holds no hashed anchor (a bundle-only image), or when `SSL_CERT_FILE` or
/// `SSL_CERT_DIR` is set (the proxy's own TLS contexts then keep OpenSSL's defaults too): the
/// bundle, as before.
enum CurlTrustDirectory {
    static let builtIn: String? = {
        guard getenv("SSL_CERT_FILE") == nil, getenv("SSL_CERT_DIR") == nil, let path = ccurl_builtin_capath() else { return nil }
        let directory = String(cString: path)
        return holdsHashedAnchors(directory) ? directory : nil
    }()

    /// Whether `directory` has an entry named eight lowercase hex digits, a dot and digits (the
    /// check OpenSSLTLS's `SystemTrustLocation` makes for the proxy's own contexts).
    static func holdsHashedAnchors(_ directory: String) -> Bool {
        guard let handle = opendir(directory) else { return false }
        defer { closedir(handle) }
        let hex = Set("0123456789abcdef".utf8), digits = Set("0123456789".utf8)
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
            if name.count >= 10, name[8] == UInt8(ascii: "."), name[..<8].allSatisfy(hex.contains), name[9...].allSatisfy(digits.contains) {
                return true
            }
        }
        return false
    }
}
