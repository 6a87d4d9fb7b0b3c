#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension CurlRequest {
    /// Header lines for CURLOPT_HTTPHEADER. Rejects anything that could smuggle extra header lines
    /// (CR/LF) or be cut short by C strings (NUL).
    func headerLines() throws(CurlTransportError) -> [String] {
        var lines: [String] = []
        var hasExpect = false
        for (name, value) in headers {
            guard !name.isEmpty, name.utf8.allSatisfy(Self.isTokenByte) else {
                throw CurlTransportError(kind: .invalidRequest, detail: "invalid header name")
            }
            guard !value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) else {
                throw CurlTransportError(kind: .invalidRequest, detail: "invalid value for header \(name)")
            }
            if name.lowercased() == "expect" { hasExpect = true }
            // "Name:" alone would make libcurl drop the header; "Name;" is its spelling for empty.
            lines.append(value.isEmpty ? "\(name);" : "\(name): \(value)")
        }
        // libcurl adds "Expect: 100-continue" to larger POSTs and then waits up to a second for a
        // 100 that resolver services never send; the body is small, so just send it.
        if method == .post && !hasExpect {
            lines.append("Expect:")
        }
        return lines
    }

    /// The CURLOPT_RESOLVE entry "host:port:ip1,[ip6],..." pinning `target`, or nil when not pinned.
    func resolveEntry(for target: RequestTarget) throws(CurlTransportError) -> String? {
        guard !pinnedAddresses.isEmpty else { return nil }
        var formatted: [String] = []
        for address in pinnedAddresses {
            guard let entry = Self.resolveForm(of: address) else {
                throw CurlTransportError(kind: .invalidRequest, detail: "pinned address is not an IP literal")
            }
            formatted.append(entry)
        }
        return "\(target.host):\(target.port):\(formatted.joined(separator: ","))"
    }

    /// The CURLOPT_CONNECT_TO entry "host:port:ip:port" for `connectAddress`, or nil.
    func connectToEntry(for target: RequestTarget) throws(CurlTransportError) -> String? {
        guard let connectAddress else { return nil }
        guard let address = Self.resolveForm(of: connectAddress) else {
            throw CurlTransportError(kind: .invalidRequest, detail: "connect address is not an IP literal")
        }
        return "\(target.host):\(target.port):\(address):\(target.port)"
    }

    /// "192.0.2.1" stays as is; "2001:db8::1" or "[2001:db8::1]" becomes "[2001:db8::1]"; nil otherwise.
    static func resolveForm(of address: String) -> String? {
        var bare = Substring(address)
        if bare.hasPrefix("[") && bare.hasSuffix("]") {
            bare = bare.dropFirst().dropLast()
        }
        var storage = in6_addr()
        if !bare.contains(":") {
            return inet_pton(AF_INET, String(bare), &storage) == 1 ? String(bare) : nil
        }
        return inet_pton(AF_INET6, String(bare), &storage) == 1 ? "[\(bare)]" : nil
    }

    /// RFC 9110 token characters.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }

    /// Timeouts as libcurl milliseconds; a non-positive total timeout would mean "no limit" to libcurl.
    func timeoutMilliseconds() throws(CurlTransportError) -> (total: Int, connect: Int?) {
        let total = timeout.curlMilliseconds
        guard total > 0 else {
            throw CurlTransportError(kind: .invalidRequest, detail: "timeout must be positive")
        }
        guard let connectTimeout else { return (total, nil) }
        let connect = connectTimeout.curlMilliseconds
        guard connect > 0 else {
            throw CurlTransportError(kind: .invalidRequest, detail: "connect timeout must be positive")
        }
        return (total, connect)
    }
}
