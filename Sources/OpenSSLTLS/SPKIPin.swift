import COpenSSL

/// SHA-256 SPKI pins (RFC 7469 style): base64 of the SHA-256 of the DER SubjectPublicKeyInfo.
enum SPKIPin {
    /// The pin of `certificate` (an `X509 *` owned by the caller), or nil if it cannot be computed.
    static func pin(ofCertificate certificate: OpaquePointer) -> String? {
        guard let publicKey = X509_get_X509_PUBKEY(certificate) else { return nil }
        let length = i2d_X509_PUBKEY(publicKey, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer -> CInt in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d_X509_PUBKEY(publicKey, &cursor)
        }
        guard written == length else { return nil }
        return self.base64SHA256(der)
    }

    static func base64SHA256(_ bytes: [UInt8]) -> String? {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var digestLength: CUnsignedInt = 0
        let ok = bytes.withUnsafeBytes { input in
            EVP_Digest(input.baseAddress, input.count, &digest, &digestLength, EVP_sha256(), nil)
        }
        guard ok == 1 else { return nil }
        // 4 * ceil(n / 3) characters plus the NUL that EVP_EncodeBlock appends.
        var encoded = [UInt8](repeating: 0, count: 4 * ((Int(digestLength) + 2) / 3) + 1)
        let encodedLength = EVP_EncodeBlock(&encoded, digest, CInt(digestLength))
        guard encodedLength > 0 else { return nil }
        return String(decoding: encoded.prefix(Int(encodedLength)), as: UTF8.self)
    }
}
