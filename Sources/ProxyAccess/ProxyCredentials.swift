import NIOHTTP1
import ProxyKit

/// The Basic credentials of a request's `Proxy-Authorization` field (RFC 7617, RFC 9110 §11.7.4).
package struct ProxyCredentials: Sendable, Equatable {
    package let user: String
    let password: String

    /// Credentials that did not come in a header (SOCKS5 username/password, RFC 1929).
    package init(user: String, password: String) {
        self.user = user
        self.password = password
    }

    package enum Parsed: Equatable {
        case missing
        /// Present but unusable; the reason names no secret.
        case malformed(String)
        case basic(ProxyCredentials)
    }

    package static func parse(_ headers: HTTPHeaders) -> Parsed {
        let values = headers[canonicalForm: "proxy-authorization"]
        guard let first = values.first else { return .missing }
        guard values.count == 1 else { return .malformed("more than one Proxy-Authorization field") }
        let value = String(first)
        guard let space = value.firstIndex(of: " ") else {
            return .malformed("Proxy-Authorization is not 'Basic <base64>'")
        }
        let scheme = value[..<space]
        guard scheme.lowercased() == "basic" else {
            return .malformed("unsupported authentication scheme '\(ProxyError.sanitized(String(scheme), limit: 20))' (use Basic)")
        }
        let token = value[space...].drop { $0 == " " }
        guard let decoded = Base64.decode(token.utf8), let text = String(validating: decoded, as: UTF8.self) else {
            return .malformed("the Basic credentials are not valid base64 of UTF-8 text")
        }
        guard let colon = text.firstIndex(of: ":") else {
            return .malformed("the Basic credentials have no ':' between user and password")
        }
        // crypt_r reads a C string: a NUL would end the password early (many spellings, one hash).
        guard !text.utf8.contains(0) else {
            return .malformed("the Basic credentials contain a NUL byte")
        }
        return .basic(
            ProxyCredentials(user: String(text[..<colon]), password: String(text[text.index(after: colon)...]))
        )
    }
}

/// Strict base64 (RFC 4648 §4, padding required, no white space) for token68 credentials.
enum Base64 {
    private static let table: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8.enumerated() {
            table[Int(byte)] = UInt8(index)
        }
        return table
    }()

    static func decode<Bytes: Collection>(_ input: Bytes) -> [UInt8]? where Bytes.Element == UInt8 {
        let bytes = Array(input)
        guard !bytes.isEmpty, bytes.count % 4 == 0, bytes.count <= 8192 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count / 4 * 3)
        var index = 0
        while index < bytes.count {
            let last = index + 4 == bytes.count
            var values: [UInt8] = []
            var padding = 0
            for offset in 0..<4 {
                let byte = bytes[index + offset]
                if byte == UInt8(ascii: "=") {
                    // Padding only at the end, only in the last two places.
                    guard last, offset >= 2 else { return nil }
                    padding += 1
                    continue
                }
                guard padding == 0 else { return nil }
                let value = table[Int(byte)]
                guard value != 0xFF else { return nil }
                values.append(value)
            }
            let combined = values.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (18 - 6 * UInt32($1.offset)) }
            out.append(UInt8(truncatingIfNeeded: combined >> 16))
            if padding < 2 { out.append(UInt8(truncatingIfNeeded: combined >> 8)) }
            if padding < 1 { out.append(UInt8(truncatingIfNeeded: combined)) }
            index += 4
        }
        return out
    }
}
