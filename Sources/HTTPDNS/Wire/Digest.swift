import COpenSSL

/// Hash helpers for request signatures, through OpenSSL's one-shot EVP API
/// (the proxy already links system OpenSSL, so no second crypto library).
public enum Digest {
    /// Lowercase hex MD5, or nil when OpenSSL refuses MD5 (a FIPS-only provider).
    public static func md5Hex(_ text: String) -> String? {
        hex(Array(text.utf8), algorithm: EVP_md5())
    }

    public static func md5Hex(_ bytes: [UInt8]) -> String? {
        hex(bytes, algorithm: EVP_md5())
    }

    /// Lowercase hex SHA-256, or nil if OpenSSL fails (it should not).
    public static func sha256Hex(_ text: String) -> String? {
        hex(Array(text.utf8), algorithm: EVP_sha256())
    }

    public static func sha256Hex(_ bytes: [UInt8]) -> String? {
        hex(bytes, algorithm: EVP_sha256())
    }

    private static func hex(_ input: [UInt8], algorithm: OpaquePointer?) -> String? {
        guard let algorithm else { return nil }
        // EVP_MAX_MD_SIZE is 64; a fixed buffer avoids relying on the macro importing.
        var digest = [UInt8](repeating: 0, count: 64)
        var length: UInt32 = 0
        // An empty Array may have no storage; hand OpenSSL a valid pointer anyway.
        let source = input.isEmpty ? [0] : input
        let ok = source.withUnsafeBytes { data in
            digest.withUnsafeMutableBufferPointer { out in
                EVP_Digest(data.baseAddress, input.count, out.baseAddress, &length, algorithm, nil)
            }
        }
        guard ok == 1, length > 0, Int(length) <= digest.count else { return nil }
        return hexString(digest[0..<Int(length)])
    }

    static func hexString<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
