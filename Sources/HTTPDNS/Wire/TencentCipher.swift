import COpenSSL

/// The ciphers of Tencent Cloud HTTPDNS's plain-HTTP mode, through OpenSSL's EVP API.
///
/// - `aes`: AES-128-CBC with PKCS#7 padding; the wire form is `IV(16) || ciphertext` with a
///   fresh random IV per message. The key is the account's AES key right-padded with "0" to 16 bytes.
/// - `des`: DES-ECB with PKCS#5 padding and the account's 8-byte DES key. OpenSSL 3 keeps DES in
///   its legacy provider, loaded here into a private library context so nothing else changes.
///
/// Names and answers travel as lowercase hex of those bytes. The key is never shown.
public struct TencentCipher: Sendable, CustomStringConvertible, CustomReflectable {
    public enum Algorithm: String, Sendable, Hashable {
        case aes
        case des
    }

    public enum SetupError: Error, Sendable, Equatable, CustomStringConvertible {
        /// The key has the wrong length for the cipher (lengths only, never the key).
        case keyLength(Algorithm, actual: Int)
        /// DES asked for but OpenSSL's legacy provider (legacy.so) could not be loaded.
        case desUnavailable

        public var description: String {
            switch self {
            case .keyLength(.aes, let actual):
                return "the AES key has \(actual) bytes; expected 1 to 16"
            case .keyLength(.des, let actual):
                return "the DES key has \(actual) bytes; expected exactly 8"
            case .desUnavailable:
                return "DES needs OpenSSL's legacy provider, which could not be loaded (install it, set OPENSSL_MODULES, or use --tencent-alg aes)"
            }
        }
    }

    /// Longest input either direction: far beyond any answer, well inside Int32.
    public static let maximumInput = 1 << 20

    public let algorithm: Algorithm
    private let key: [UInt8]
    private let randomIV: @Sendable () -> [UInt8]?

    /// `randomIV`: tests pass a fixed IV for known-answer vectors; the default asks RAND_bytes.
    public init(algorithm: Algorithm, key: String, randomIV: (@Sendable () -> [UInt8]?)? = nil) throws(SetupError) {
        let bytes = Array(key.utf8)
        switch algorithm {
        case .aes:
            guard (1...16).contains(bytes.count) else { throw .keyLength(.aes, actual: bytes.count) }
            self.key = bytes + [UInt8](repeating: UInt8(ascii: "0"), count: 16 - bytes.count)
        case .des:
            guard bytes.count == 8 else { throw .keyLength(.des, actual: bytes.count) }
            guard LegacyDES.shared != nil else { throw .desUnavailable }
            self.key = bytes
        }
        self.algorithm = algorithm
        self.randomIV = randomIV ?? { TencentCipher.randomBytes(16) }
    }

    public var description: String { "TencentCipher(\(algorithm.rawValue), key: <redacted>)" }

    /// `dump` and debuggers show the algorithm only.
    public var customMirror: Mirror { Mirror(self, children: ["algorithm": algorithm.rawValue], displayStyle: .struct) }

    /// Whether DES can be used on this machine (the legacy provider loads).
    public static var isDESAvailable: Bool { LegacyDES.shared != nil }

    /// `aes`: IV || ciphertext; `des`: ciphertext. nil if OpenSSL fails or the input is too long.
    public func encrypt(_ plaintext: [UInt8]) -> [UInt8]? {
        guard plaintext.count <= Self.maximumInput else { return nil }
        switch algorithm {
        case .aes:
            guard let iv = randomIV(), iv.count == 16,
                  let body = Self.run(EVP_aes_128_cbc(), key: key, iv: iv, input: plaintext, encrypt: true)
            else { return nil }
            return iv + body
        case .des:
            guard let des = LegacyDES.shared else { return nil }
            return Self.run(des.cipher, key: key, iv: nil, input: plaintext, encrypt: true)
        }
    }

    /// The inverse of `encrypt`; nil for a wrong length, wrong key or bad padding.
    public func decrypt(_ data: [UInt8]) -> [UInt8]? {
        guard data.count <= Self.maximumInput else { return nil }
        switch algorithm {
        case .aes:
            guard data.count >= 32, data.count % 16 == 0 else { return nil }
            return Self.run(EVP_aes_128_cbc(), key: key, iv: Array(data[0..<16]), input: Array(data[16...]), encrypt: false)
        case .des:
            guard let des = LegacyDES.shared, data.count >= 8, data.count % 8 == 0 else { return nil }
            return Self.run(des.cipher, key: key, iv: nil, input: data, encrypt: false)
        }
    }

    /// Lowercase hex of the encrypted UTF-8 text.
    public func encryptHex(_ text: String) -> String? {
        encrypt(Array(text.utf8)).map { Digest.hexString($0) }
    }

    /// Decrypts hex text (either case, surrounding whitespace ignored).
    public func decryptHex(_ hex: [UInt8]) -> [UInt8]? {
        Hex.decode(hex).flatMap(decrypt)
    }

    static func randomBytes(_ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        let ok = bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        return ok == 1 ? bytes : nil
    }

    /// One EVP cipher pass. Errors are cleared from OpenSSL's per-thread queue so they cannot
    /// surface later in an unrelated TLS call on the same thread.
    private static func run(_ cipher: OpaquePointer?, key: [UInt8], iv: [UInt8]?, input: [UInt8], encrypt: Bool) -> [UInt8]? {
        guard let cipher, let context = EVP_CIPHER_CTX_new() else { return nil }
        defer { EVP_CIPHER_CTX_free(context) }
        var output = [UInt8](repeating: 0, count: input.count + 32)
        var written: Int32 = 0
        var final: Int32 = 0
        // An empty Array may have no storage; hand OpenSSL a valid pointer with length 0.
        let source = input.isEmpty ? [0] : input
        let ok = key.withUnsafeBufferPointer { keyBytes in
            (iv ?? [0]).withUnsafeBufferPointer { ivBytes in
                source.withUnsafeBufferPointer { inBytes in
                    output.withUnsafeMutableBufferPointer { out -> Bool in
                        guard EVP_CipherInit_ex2(context, cipher, keyBytes.baseAddress, iv == nil ? nil : ivBytes.baseAddress, encrypt ? 1 : 0, nil) == 1,
                              EVP_CipherUpdate(context, out.baseAddress, &written, inBytes.baseAddress, Int32(input.count)) == 1,
                              EVP_CipherFinal_ex(context, out.baseAddress! + Int(written), &final) == 1
                        else { return false }
                        return true
                    }
                }
            }
        }
        guard ok, written >= 0, final >= 0, Int(written) + Int(final) <= output.count else {
            ERR_clear_error()
            return nil
        }
        return Array(output[0..<(Int(written) + Int(final))])
    }
}

/// DES-ECB from OpenSSL's legacy provider, in a library context of its own: loading the legacy
/// provider into the default context would stop the default provider from loading implicitly.
/// Created once; never freed (process lifetime).
final class LegacyDES: @unchecked Sendable {
    // @unchecked: the pointers are set once in init and only read; a fetched EVP_CIPHER is
    // immutable and may be used by many contexts on many threads at once.
    let cipher: OpaquePointer
    private let library: OpaquePointer
    private let provider: OpaquePointer

    static let shared: LegacyDES? = LegacyDES()

    private init?() {
        guard let library = OSSL_LIB_CTX_new() else { return nil }
        guard let provider = OSSL_PROVIDER_load(library, "legacy") else {
            ERR_clear_error()
            OSSL_LIB_CTX_free(library)
            return nil
        }
        guard let cipher = EVP_CIPHER_fetch(library, "DES-ECB", nil) else {
            ERR_clear_error()
            OSSL_PROVIDER_unload(provider)
            OSSL_LIB_CTX_free(library)
            return nil
        }
        self.library = library
        self.provider = provider
        self.cipher = cipher
    }
}

/// Hex text to bytes.
enum Hex {
    /// Either case; ASCII whitespace around the text is ignored; nil for odd length or a non-hex digit.
    static func decode(_ text: [UInt8]) -> [UInt8]? {
        var slice = text[...]
        while let first = slice.first, isSpace(first) { slice.removeFirst() }
        while let last = slice.last, isSpace(last) { slice.removeLast() }
        guard slice.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(slice.count / 2)
        var index = slice.startIndex
        while index < slice.endIndex {
            guard let high = nibble(slice[index]), let low = nibble(slice[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    private static func nibble(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }
}
