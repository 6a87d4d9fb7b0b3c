import ProxyConfig
import ProxyKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An htpasswd file: one `user:hash` per line; blank lines and lines starting with `#` are
/// skipped. Every hash must be of a scheme `PasswordHash` accepts; anything else (plain text,
/// MD5, `{SHA}`, DES) stops the start with the file, the line and the reason — never the line's
/// content, which is a secret.
package struct HtpasswdFile: Sendable {
    package struct LoadError: Error, Sendable, CustomStringConvertible {
        let path: String
        let line: Int?
        let reason: String

        package var description: String {
            if let line { return "htpasswd file \(path), line \(line): \(reason)" }
            return "htpasswd file \(path): \(reason)"
        }
    }

    /// Files larger than this are refused (an htpasswd file of 1 MiB holds ~15,000 bcrypt users).
    static let maxBytes = 1 << 20

    let users: [String: PasswordHash]

    static func load(path: String) throws(LoadError) -> HtpasswdFile {
        guard let file = fopen(path, "r") else {
            throw LoadError(path: path, line: nil, reason: "cannot open: \(String(cString: strerror(errno)))")
        }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            if count == 0 { break }
            bytes += chunk[0..<count]
            if bytes.count > maxBytes {
                throw LoadError(path: path, line: nil, reason: "larger than \(maxBytes) bytes")
            }
        }
        if ferror(file) != 0 {
            throw LoadError(path: path, line: nil, reason: "read error: \(String(cString: strerror(errno)))")
        }
        return try parse(bytes, path: path)
    }

    static func parse(_ bytes: [UInt8], path: String) throws(LoadError) -> HtpasswdFile {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw LoadError(path: path, line: nil, reason: "not UTF-8 text")
        }
        var users: [String: PasswordHash] = [:]
        var lineNumber = 0
        // Split on line ends by scalar: "\r\n" is one Character and would not split on "\n".
        for line in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            lineNumber += 1
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            guard let colon = line.firstIndex(of: ":") else {
                throw LoadError(path: path, line: lineNumber, reason: "expected user:hash")
            }
            let user = String(line[..<colon])
            // htpasswd files may carry extra ':'-separated fields after the hash; hashes have no ':'.
            let hashText = line[line.index(after: colon)...].prefix { $0 != ":" }
            guard ProxyAuthSource.isValidUser(user) else {
                throw LoadError(path: path, line: lineNumber, reason: "invalid user name (printable, no ':' or spaces)")
            }
            guard users[user] == nil else {
                throw LoadError(path: path, line: lineNumber, reason: "user '\(ProxyError.sanitized(user))' appears twice")
            }
            switch PasswordHash.parse(String(hashText)) {
            case .success(let hash): users[user] = hash
            case .failure(let rejection): throw LoadError(path: path, line: lineNumber, reason: rejection.reason)
            }
        }
        guard !users.isEmpty else {
            throw LoadError(path: path, line: nil, reason: "no users")
        }
        return HtpasswdFile(users: users)
    }
}
