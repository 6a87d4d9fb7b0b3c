import COpenSSL
import Glibc

/// Where a context reads the system's trust anchors from.
///
/// OpenSSL's defaults load the whole CA bundle file into every context at creation: about 140
/// certificates, 0.8 MiB of heap per process that never dials a TLS origin (measured with
/// `bench/bench run --scenarios footprint`). A hashed directory (`c_rehash` / `openssl rehash`
/// names, as Debian's ca-certificates and most distributions keep beside the bundle) is read
/// one anchor at a time, when a chain needs it; a loaded anchor stays in the context's store.
public enum SystemTrustLocation: Sendable, Equatable {
    /// `SSL_CTX_set_default_verify_paths`: the bundle file and the directory of OpenSSL's build, or
    /// `SSL_CERT_FILE` / `SSL_CERT_DIR` when set.
    case openSSLDefaults
    /// Only this hashed directory, read on demand.
    case hashedDirectory(String)

    /// The hashed directory of OpenSSL's build when it holds hashed anchors and neither
    /// `SSL_CERT_FILE` nor `SSL_CERT_DIR` says otherwise; else OpenSSL's defaults (a bundle-only
    /// image, such as a distroless one, keeps working as before).
    public static func detect(
        environment: (String) -> String? = { getenv($0).map { String(cString: $0) } },
        directory: String = String(cString: X509_get_default_cert_dir())
    ) -> SystemTrustLocation {
        if environment("SSL_CERT_FILE") != nil || environment("SSL_CERT_DIR") != nil { return .openSSLDefaults }
        return hasHashedAnchors(directory) ? .hashedDirectory(directory) : .openSSLDefaults
    }

    /// The bundle file of OpenSSL's build (`SSL_CERT_FILE` aside).
    package static var openSSLDefaultFile: String { String(cString: X509_get_default_cert_file()) }

    /// Whether `directory` holds at least one `HHHHHHHH.N` entry (eight lowercase hex digits, a
    /// dot, digits): the names OpenSSL's directory lookup opens. CurlTransport's
    /// `CurlTrustDirectory` makes the same check for libcurl (the modules share no dependency).
    static func hasHashedAnchors(_ directory: String) -> Bool {
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
