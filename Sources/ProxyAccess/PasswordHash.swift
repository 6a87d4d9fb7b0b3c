import CCrypt
import ProxyKit

/// A password hash from an htpasswd file, verified with libxcrypt's `crypt_r`. Only the modern
/// schemes are accepted: bcrypt, sha-crypt and yescrypt. Plain text, MD5 (`$apr1$`, `$1$`),
/// `{SHA}` and DES `crypt` lines are refused when the file is read.
struct PasswordHash: Sendable, Hashable {
    enum Scheme: String, Sendable {
        case bcrypt, sha256crypt = "sha256-crypt", sha512crypt = "sha512-crypt", yescrypt
    }

    let text: String
    let scheme: Scheme

    /// nil with a reason when `text` is not a complete hash of an accepted scheme.
    static func parse(_ text: String) -> Result<PasswordHash, HashRejection> {
        let scheme: Scheme
        let hashLength: Int
        if text.hasPrefix("$2b$") || text.hasPrefix("$2y$") || text.hasPrefix("$2a$") {
            // $2b$NN$ + 22 salt + 31 hash characters: the whole string is 60 long.
            guard text.utf8.count == 60 else { return .failure(.init("a bcrypt hash is 60 characters long")) }
            (scheme, hashLength) = (.bcrypt, 53)
        } else if text.hasPrefix("$5$") {
            (scheme, hashLength) = (.sha256crypt, 43)
        } else if text.hasPrefix("$6$") {
            (scheme, hashLength) = (.sha512crypt, 86)
        } else if text.hasPrefix("$y$") {
            (scheme, hashLength) = (.yescrypt, 43)
        } else if text.hasPrefix("$") || text.hasPrefix("{") {
            let begins = ProxyError.sanitized(String(text.prefix(6)))
            return .failure(.init("unsupported hash scheme (the hash begins '\(begins)'; use bcrypt $2y$/$2b$, sha-crypt $5$/$6$ or yescrypt $y$)"))
        } else {
            return .failure(.init("not a password hash (plain-text passwords are refused; make one with 'htpasswd -B' or 'openssl passwd -6')"))
        }
        guard text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return .failure(.init("a hash has no spaces or control characters"))
        }
        // The last '$'-separated field is the hash itself (for bcrypt: salt and hash).
        let last = text.split(separator: "$", omittingEmptySubsequences: false).last ?? ""
        guard last.utf8.count == hashLength else {
            return .failure(.init("a \(scheme.rawValue) hash ends in \(hashLength) characters, this one in \(last.utf8.count)"))
        }
        // The scheme is chosen above; libxcrypt checks the setting is well-formed and enabled. (It
        // calls sha-crypt "legacy", i.e. not its first choice for new hashes; still accepted.)
        let status = crypt_checksalt(text)
        guard status != httpdns_crypt_salt_invalid(), status != httpdns_crypt_salt_disabled() else {
            return .failure(.init("libxcrypt does not accept this \(scheme.rawValue) setting"))
        }
        return .success(PasswordHash(text: text, scheme: scheme))
    }

    /// Whether `password` hashes to this hash. Costs the scheme's work factor (bcrypt: tens of
    /// milliseconds): run it off the event loops.
    func verify(_ password: String) -> Bool {
        let data = UnsafeMutablePointer<crypt_data>.allocate(capacity: 1)
        defer {
            // The work area held the password and hash: wipe it.
            UnsafeMutableRawPointer(data).initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<crypt_data>.size)
            data.deallocate()
        }
        UnsafeMutableRawPointer(data).initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<crypt_data>.size)
        guard let output = crypt_r(password, text, data) else { return false }
        let computed = String(cString: output)
        // A failure token starts with '*' and never equals a valid hash.
        return ConstantTime.equal(Array(computed.utf8), Array(text.utf8))
    }
}

struct HashRejection: Error, Sendable {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}

/// Comparison whose time depends on the lengths only, not on where the bytes differ.
enum ConstantTime {
    static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference: UInt8 = a.count == b.count ? 0 : 1
        for index in 0..<max(a.count, b.count) {
            let x = index < a.count ? a[index] : 0
            let y = index < b.count ? b[index] : 0
            difference |= x ^ y
        }
        return difference == 0
    }
}
