import NIOCore
import ProxyConfig
import ProxyKit

/// The server side of a SOCKS handshake, as a value with no I/O: SOCKS5 (RFC 1928) with no
/// authentication or username/password (RFC 1929), and SOCKS4/4a, told apart by the first byte.
/// The handler feeds it the bytes it reads and does what each `Output` says: write `reply`, then
/// wait for more bytes, check credentials, dial, or close. After a dial it reports the outcome and
/// writes the reply the machine makes; from then on the connection is a tunnel.
///
/// Strict by design (the bytes are an attacker's): a wrong version byte, a method list of 0
/// entries, a reserved byte that is not 0, a name that is empty, over 253 bytes or not a host
/// name, a SOCKS4 user id without its NUL within 255 bytes, more than `maximumBuffered` bytes
/// before the request is whole, or any byte after the request before the reply: refused with the
/// version's failure reply where the version is known, and closed; nothing is dialed.
package struct SOCKSHandshake: Sendable {
    package struct Settings: Sendable, Equatable {
        /// `--proxy-auth` is on: SOCKS5 must use username/password; SOCKS4, which cannot carry a
        /// password, is refused.
        package var requireCredentials: Bool
        /// `--socks-sniff`: a CONNECT to an address is granted at once and the client's first bytes
        /// peeked for the name it means (a ClientHello's SNI, a request's Host), which is dialed
        /// through HTTPDNS instead of the address.
        package var sniff: Bool

        package init(requireCredentials: Bool, sniff: Bool = false) {
            self.requireCredentials = requireCredentials
            self.sniff = sniff
        }
    }

    /// What the handler does next, after writing `reply` (when not empty).
    package enum Step: Sendable, Equatable {
        /// Read more bytes.
        case needMore
        /// Check these credentials (RFC 1929), then call `credentialsChecked`.
        case verify(username: String, password: String)
        /// Dial the destination (policy, HTTPDNS, connect-by-IP), then call `connected` or
        /// `connectFailed`.
        case connect(SOCKSRequest)
        /// The CONNECT to an address is granted (the reply says so); peek the client's first
        /// bytes, then call `sniffed` with the name they carry, if any.
        case sniff(SOCKSRequest)
        /// The handshake is over: relay bytes both ways.
        case tunnel
        /// Close the connection (after the reply, if any); `reason` is for the log.
        case close(reason: String)
    }

    package struct Output: Sendable, Equatable {
        package var reply: [UInt8]
        package var step: Step
    }

    /// The longest handshake message is a username/password sub-negotiation (513 bytes).
    package static let maximumBuffered = 1024

    private enum State: Sendable {
        case greeting
        case authentication
        case request(user: String?)
        case verifying
        case sniffing(SOCKSRequest)
        /// `replied`: the client was granted the CONNECT before the dial (a sniffed one).
        case connecting(SOCKSRequest, replied: Bool)
        case tunnel
        case closed
    }

    private let settings: Settings
    private var state = State.greeting
    private var version: SOCKSVersion?
    private var buffered: [UInt8] = []
    /// The username of a `.verify` step, until its verdict.
    private var pendingUser: String?

    package init(settings: Settings) {
        self.settings = settings
    }

    /// The client sent `bytes`.
    package mutating func received(_ bytes: ByteBufferView) -> Output {
        switch state {
        case .connecting:
            // RFC 1928 has the client wait for the reply; bytes now are not a tunnel's yet.
            return refuse(.generalFailure, "bytes after the request before the reply")
        case .verifying:
            // A request sent with the credentials: kept for after the verdict, bounded.
            buffered.append(contentsOf: bytes)
            guard buffered.count <= Self.maximumBuffered else {
                return refuse(.generalFailure, "handshake longer than \(Self.maximumBuffered) bytes")
            }
            return Output(reply: [], step: .needMore)
        case .tunnel, .closed, .sniffing:
            // While sniffing the bytes are the peek's, never the handshake's.
            return Output(reply: [], step: .close(reason: "bytes after the handshake ended"))
        case .greeting, .authentication, .request:
            break
        }
        buffered.append(contentsOf: bytes)
        var reply: [UInt8] = []
        while true {
            guard buffered.count <= Self.maximumBuffered else {
                return refuse(.generalFailure, "handshake longer than \(Self.maximumBuffered) bytes", before: reply)
            }
            var reader = SOCKSReader(buffered)
            let output: Output?
            switch state {
            case .greeting: output = greeting(&reader)
            case .authentication: output = authentication(&reader)
            case .request(let user): output = request(&reader, user: user)
            default: preconditionFailure("unreachable: checked above")
            }
            guard var output else { return Output(reply: reply, step: .needMore) }
            buffered.removeFirst(reader.consumed)
            output.reply = reply + output.reply
            switch output.step {
            case .needMore:
                // A stage ended (method chosen); a client that sent the next one at once goes on.
                reply = output.reply
                if buffered.isEmpty { return output }
            case .connect, .sniff:
                if !buffered.isEmpty { return refuse(.generalFailure, "bytes after the request before the reply", before: reply) }
                return output
            default:
                return output
            }
        }
    }

    /// The credentials of a `.verify` step were checked.
    package mutating func credentialsChecked(_ valid: Bool) -> Output {
        guard case .verifying = state else { return Output(reply: [], step: .close(reason: "credentials checked out of turn")) }
        guard valid else {
            state = .closed
            return Output(reply: [0x01, 0x01], step: .close(reason: "wrong SOCKS username or password"))
        }
        state = .request(user: pendingUser)
        pendingUser = nil
        if buffered.isEmpty { return Output(reply: [0x01, 0x00], step: .needMore) }
        var next = received(ByteBufferView())
        next.reply = [0x01, 0x00] + next.reply
        return next
    }

    /// A whole request: dialed, or, to an address with `sniff` on, granted first and sniffed.
    private mutating func accepted(_ request: SOCKSRequest) -> Output {
        if settings.sniff, case .address = request.destination {
            state = .sniffing(request)
            return Output(reply: Self.reply(.succeeded, version: request.version, bound: nil), step: .sniff(request))
        }
        state = .connecting(request, replied: false)
        return Output(reply: [], step: .connect(request))
    }

    /// The peek of a `.sniff` step ended: `name` is what the client's first bytes named (nil:
    /// nothing usable, so the address it asked for is dialed as given).
    package mutating func sniffed(name: String?) -> Output {
        guard case .sniffing(var request) = state else { return Output(reply: [], step: .close(reason: "sniffed out of turn")) }
        if let name { request.destination = .name(name) }
        state = .connecting(request, replied: true)
        return Output(reply: [], step: .connect(request))
    }

    /// The dial of a `.connect` step succeeded; `bound` is the upstream socket's local address
    /// (BND.ADDR, BND.PORT), when known.
    package mutating func connected(bound: (IPAddress, Int)?) -> Output {
        guard case .connecting(_, let replied) = state else { return Output(reply: [], step: .close(reason: "connected out of turn")) }
        state = .tunnel
        return Output(reply: replied ? [] : Self.reply(.succeeded, version: version ?? .v5, bound: bound), step: .tunnel)
    }

    /// The dial of a `.connect` step failed (policy, resolution, connection). A client granted
    /// the CONNECT before the dial (sniffed) can only be closed.
    package mutating func connectFailed(_ kind: ProxyError.Kind, reason: String) -> Output {
        guard case .connecting(_, let replied) = state else { return Output(reply: [], step: .close(reason: reason)) }
        guard !replied else {
            state = .closed
            return Output(reply: [], step: .close(reason: reason))
        }
        return refuse(Self.code(for: kind), reason)
    }

    /// The REP a failed dial gets (RFC 1928 §6): the destination policy's refusals "not allowed",
    /// a name that does not resolve "host unreachable", a refused connection "refused", a dial
    /// that timed out "TTL expired"; anything else "general failure".
    package static func code(for kind: ProxyError.Kind) -> SOCKSReplyCode {
        switch kind {
        case .destinationDenied, .routeDenied, .connectPortDenied, .loopDetected, .clientNotAllowed: .notAllowed
        case .resolveFailed: .hostUnreachable
        case .connectFailed: .connectionRefused
        case .connectTimeout: .ttlExpired
        default: .generalFailure
        }
    }

    // MARK: - the stages

    private mutating func greeting(_ reader: inout SOCKSReader) -> Output? {
        guard let first = reader.byte() else { return nil }
        switch first {
        case 0x05:
            version = .v5
            guard let count = reader.byte() else { return nil }
            guard count > 0 else { return refuse(nil, "SOCKS5 greeting offers no method", methodReply: true) }
            guard let methods = reader.bytes(Int(count)) else { return nil }
            let wanted: UInt8 = settings.requireCredentials ? 0x02 : 0x00
            guard methods.contains(wanted) else {
                let why = settings.requireCredentials ? "the client offers no username/password method and --proxy-auth is on"
                    : "the client offers no method without authentication"
                return refuse(nil, why, methodReply: true)
            }
            state = wanted == 0x02 ? .authentication : .request(user: nil)
            return Output(reply: [0x05, wanted], step: .needMore)
        case 0x04:
            version = .v4
            return socks4(&reader)
        default:
            return refuse(nil, "not SOCKS: first byte \(first)")
        }
    }

    private mutating func authentication(_ reader: inout SOCKSReader) -> Output? {
        guard let subversion = reader.byte() else { return nil }
        guard subversion == 0x01 else {
            state = .closed
            return Output(reply: [0x01, 0x01], step: .close(reason: "username/password version \(subversion), not 1"))
        }
        guard let userLength = reader.byte(), let user = reader.bytes(Int(userLength)),
              let passwordLength = reader.byte(), let password = reader.bytes(Int(passwordLength))
        else { return nil }
        guard userLength > 0 else {
            state = .closed
            return Output(reply: [0x01, 0x01], step: .close(reason: "empty SOCKS username"))
        }
        state = .verifying
        let username = String(decoding: user, as: UTF8.self)
        pendingUser = username
        return Output(reply: [], step: .verify(username: username, password: String(decoding: password, as: UTF8.self)))
    }

    private mutating func request(_ reader: inout SOCKSReader, user: String?) -> Output? {
        guard let header = reader.bytes(4) else { return nil }
        guard header[0] == 0x05 else { return refuse(.generalFailure, "request version \(header[0]), not 5") }
        guard header[2] == 0x00 else { return refuse(.generalFailure, "reserved byte \(header[2]), not 0") }
        let destination: SOCKSDestination
        switch header[3] {
        case 0x01:
            guard let bytes = reader.bytes(4) else { return nil }
            destination = .address(IPAddress(validatedBytes: bytes))
        case 0x04:
            guard let bytes = reader.bytes(16) else { return nil }
            destination = .address(IPAddress(validatedBytes: bytes))
        case 0x03:
            guard let length = reader.byte(), let name = reader.bytes(Int(length)) else { return nil }
            guard let parsed = Self.destination(name: name) else {
                return refuse(.generalFailure, "destination name \(length == 0 ? "empty" : "not a host name")")
            }
            destination = parsed
        default:
            guard reader.bytes(2) != nil else { return nil }
            return refuse(.addressTypeNotSupported, "address type \(header[3])")
        }
        guard let portBytes = reader.bytes(2) else { return nil }
        guard header[1] == 0x01 else {
            let command = header[1] == 0x02 ? "BIND" : header[1] == 0x03 ? "UDP ASSOCIATE" : "command \(header[1])"
            return refuse(.commandNotSupported, "\(command) is not supported")
        }
        let port = Int(portBytes[0]) << 8 | Int(portBytes[1])
        guard port > 0 else { return refuse(.generalFailure, "destination port 0") }
        let request = SOCKSRequest(version: .v5, destination: destination, port: port, user: user)
        return accepted(request)
    }

    /// SOCKS4 (RFC-less, 1992) and 4a: VN 4, CD, DSTPORT, DSTIP, USERID NUL [, HOST NUL when
    /// DSTIP is 0.0.0.x with x ≠ 0].
    private mutating func socks4(_ reader: inout SOCKSReader) -> Output? {
        guard let header = reader.bytes(7) else { return nil }
        guard let userID = reader.until(nul: 256) else {
            return reader.remaining > 255 ? refuse(.generalFailure, "SOCKS4 user id without its NUL in 255 bytes") : nil
        }
        let ip = Array(header[3..<7])
        var destination = SOCKSDestination.address(IPAddress(validatedBytes: ip))
        if ip[0] == 0 && ip[1] == 0 && ip[2] == 0 && ip[3] != 0 {
            guard let name = reader.until(nul: 256) else {
                return reader.remaining > 255 ? refuse(.generalFailure, "SOCKS4a host name without its NUL in 255 bytes") : nil
            }
            guard let parsed = Self.destination(name: name) else { return refuse(.generalFailure, "SOCKS4a host name not a host name") }
            destination = parsed
        }
        guard !settings.requireCredentials else {
            return refuse(.notAllowed, "SOCKS4 cannot carry a password and --proxy-auth is on")
        }
        guard header[0] == 0x01 else { return refuse(.commandNotSupported, "SOCKS4 command \(header[0]) is not supported") }
        let port = Int(header[1]) << 8 | Int(header[2])
        guard port > 0 else { return refuse(.generalFailure, "destination port 0") }
        let user = userID.isEmpty ? nil : String(decoding: userID, as: UTF8.self)
        let request = SOCKSRequest(version: .v4, destination: destination, port: port, user: user)
        return accepted(request)
    }

    // MARK: - replies

    /// Refuses: the version's failure reply (SOCKS5 REP, or SOCKS4's 91; for a SOCKS5 greeting,
    /// "no acceptable methods"), or none when the version is unknown; then close.
    private mutating func refuse(_ code: SOCKSReplyCode?, _ reason: String, methodReply: Bool = false, before: [UInt8] = []) -> Output {
        state = .closed
        var reply = before
        if methodReply {
            reply += [0x05, 0xFF]
        } else if let code, let version {
            reply += Self.reply(code, version: version, bound: nil)
        }
        return Output(reply: reply, step: .close(reason: reason))
    }

    package static func reply(_ code: SOCKSReplyCode, version: SOCKSVersion, bound: (IPAddress, Int)?) -> [UInt8] {
        var port: [UInt8] = [0, 0]
        if let (_, number) = bound { port = [UInt8(number >> 8 & 0xFF), UInt8(number & 0xFF)] }
        switch version {
        case .v4:
            let granted: UInt8 = code == .succeeded ? SOCKSReplyCode.socks4Granted : SOCKSReplyCode.socks4Rejected
            var address: [UInt8] = [0, 0, 0, 0]
            if let (ip, _) = bound, ip.isIPv4 { address = ip.bytes }
            return [0x00, granted] + port + address
        case .v5:
            guard let (address, _) = bound else { return [0x05, code.rawValue, 0x00, 0x01, 0, 0, 0, 0] + port }
            let type: UInt8 = address.isIPv4 ? 0x01 : 0x04
            return [0x05, code.rawValue, 0x00, type] + address.bytes + port
        }
    }

    /// A destination name as a host: an IP literal in text is an address; otherwise 1 to 253
    /// bytes of letters, digits, '-', '_' and '.' (no empty label), lowercased, one trailing dot
    /// dropped.
    static func destination(name bytes: [UInt8]) -> SOCKSDestination? {
        var text = String(decoding: bytes, as: UTF8.self)
        if text.hasSuffix(".") { text.removeLast() }
        guard !text.isEmpty, text.utf8.count <= 253 else { return nil }
        if let address = IPAddress(text) { return .address(address) }
        let allowed = text.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
        }
        guard allowed, !text.split(separator: ".", omittingEmptySubsequences: false).contains(where: \.isEmpty) else { return nil }
        return .name(text.lowercased())
    }
}

/// Reads a handshake message from the bytes buffered so far; nil from any read: not all here yet.
struct SOCKSReader {
    private let data: [UInt8]
    private(set) var consumed = 0

    init(_ data: [UInt8]) { self.data = data }

    var remaining: Int { data.count - consumed }

    mutating func byte() -> UInt8? {
        guard consumed < data.count else { return nil }
        defer { consumed += 1 }
        return data[consumed]
    }

    mutating func bytes(_ count: Int) -> [UInt8]? {
        guard data.count - consumed >= count else { return nil }
        defer { consumed += count }
        return Array(data[consumed..<consumed + count])
    }

    /// The bytes before the next NUL (consuming it), if one comes within `limit` bytes.
    mutating func until(nul limit: Int) -> [UInt8]? {
        let end = min(data.count, consumed + limit)
        guard let nul = data[consumed..<end].firstIndex(of: 0) else { return nil }
        defer { consumed = nul + 1 }
        return Array(data[consumed..<nul])
    }
}
