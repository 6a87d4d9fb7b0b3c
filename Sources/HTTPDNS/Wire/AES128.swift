import COpenSSL

/// AES-128 in the two modes Alibaba HTTPDNS v2 uses, through OpenSSL's EVP API. Every function
/// returns nil instead of throwing: a wrong key, a short input or a bad tag are all "could not
/// decrypt", and nothing about the key is ever put into an error.
public enum AES128 {
    public static let keyLength = 16
    public static let cbcIVLength = 16
    public static let gcmIVLength = 12
    public static let gcmTagLength = 16

    /// `count` bytes from OpenSSL's CSPRNG (for IVs and nonces), nil if it has no entropy.
    public static func randomBytes(_ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: max(count, 1))
        let ok = bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        guard ok == 1 else { return nil }
        return Array(bytes.prefix(count))
    }

    /// AES-128-CBC with PKCS#7 padding.
    public static func cbcEncrypt(key: [UInt8], iv: [UInt8], plaintext: [UInt8]) -> [UInt8]? {
        guard key.count == keyLength, iv.count == cbcIVLength else { return nil }
        return CipherContext()?.run(EVP_aes_128_cbc(), encrypt: true, key: key, iv: iv, input: plaintext)
    }

    public static func cbcDecrypt(key: [UInt8], iv: [UInt8], ciphertext: [UInt8]) -> [UInt8]? {
        guard key.count == keyLength, iv.count == cbcIVLength, !ciphertext.isEmpty, ciphertext.count % 16 == 0 else { return nil }
        return CipherContext()?.run(EVP_aes_128_cbc(), encrypt: false, key: key, iv: iv, input: ciphertext)
    }

    /// AES-128-GCM; the result is the ciphertext followed by the 16-byte tag.
    public static func gcmEncrypt(key: [UInt8], iv: [UInt8], plaintext: [UInt8]) -> [UInt8]? {
        guard key.count == keyLength, iv.count == gcmIVLength else { return nil }
        return CipherContext()?.run(EVP_aes_128_gcm(), encrypt: true, key: key, iv: iv, input: plaintext, gcmTag: [])
    }

    /// `sealed`: ciphertext followed by the 16-byte tag. nil when the tag does not verify.
    public static func gcmDecrypt(key: [UInt8], iv: [UInt8], sealed: [UInt8]) -> [UInt8]? {
        guard key.count == keyLength, iv.count == gcmIVLength, sealed.count >= gcmTagLength else { return nil }
        let tag = Array(sealed.suffix(gcmTagLength))
        let ciphertext = Array(sealed.dropLast(gcmTagLength))
        return CipherContext()?.run(EVP_aes_128_gcm(), encrypt: false, key: key, iv: iv, input: ciphertext, gcmTag: tag)
    }
}

/// Owns one `EVP_CIPHER_CTX` for one operation.
private final class CipherContext {
    private let context: OpaquePointer

    init?() {
        guard let context = EVP_CIPHER_CTX_new() else { return nil }
        self.context = context
    }

    deinit {
        EVP_CIPHER_CTX_free(context)
    }

    /// `gcmTag`: nil for CBC; for GCM empty when encrypting (the tag is appended to the output),
    /// the expected tag when decrypting.
    func run(_ cipher: OpaquePointer?, encrypt: Bool, key: [UInt8], iv: [UInt8], input: [UInt8], gcmTag: [UInt8]? = nil) -> [UInt8]? {
        let result = runOnce(cipher, encrypt: encrypt, key: key, iv: iv, input: input, gcmTag: gcmTag)
        // A failure (bad padding, a tag that does not verify: both come from the answer) leaves
        // errors on this thread's OpenSSL queue; a later TLS call on the thread would read them.
        if result == nil { ERR_clear_error() }
        return result
    }

    private func runOnce(_ cipher: OpaquePointer?, encrypt: Bool, key: [UInt8], iv: [UInt8], input: [UInt8], gcmTag: [UInt8]?) -> [UInt8]? {
        guard let cipher else { return nil }
        let initialised = key.withUnsafeBufferPointer { keyPointer in
            iv.withUnsafeBufferPointer { ivPointer in
                EVP_CipherInit_ex(context, cipher, nil, keyPointer.baseAddress, ivPointer.baseAddress, encrypt ? 1 : 0)
            }
        }
        guard initialised == 1 else { return nil }
        var output = [UInt8](repeating: 0, count: input.count + 32)
        var written: Int32 = 0
        if !input.isEmpty {
            let ok = input.withUnsafeBufferPointer { inPointer in
                output.withUnsafeMutableBufferPointer { out in
                    EVP_CipherUpdate(context, out.baseAddress, &written, inPointer.baseAddress, Int32(input.count))
                }
            }
            guard ok == 1 else { return nil }
        }
        if let gcmTag, !encrypt {
            var tag = gcmTag
            let ok = tag.withUnsafeMutableBufferPointer { httpdns_EVP_CIPHER_CTX_set_gcm_tag(context, $0.baseAddress, Int32($0.count)) }
            guard ok == 1 else { return nil }
        }
        var finalWritten: Int32 = 0
        let finished = output.withUnsafeMutableBufferPointer { out in
            EVP_CipherFinal_ex(context, out.baseAddress! + Int(written), &finalWritten)
        }
        guard finished == 1 else { return nil }
        var result = Array(output.prefix(Int(written + finalWritten)))
        if gcmTag != nil, encrypt {
            var tag = [UInt8](repeating: 0, count: AES128.gcmTagLength)
            let ok = tag.withUnsafeMutableBufferPointer { httpdns_EVP_CIPHER_CTX_get_gcm_tag(context, $0.baseAddress, Int32($0.count)) }
            guard ok == 1 else { return nil }
            result += tag
        }
        return result
    }
}
