import NIOCore

/// How a message's body is delimited, decided once from its head (RFC 9112 §6.3).
package enum BodyFraming: Sendable, Hashable {
    /// No body: a request without framing fields, HEAD/204/304/1xx responses, Content-Length: 0.
    case none
    case contentLength(Int)
    case chunked
    /// The body ends when the connection closes (responses only, RFC 9112 §6.3 rule 8).
    case untilClose
    /// No body, and what follows the head is not HTTP: a CONNECT request, a 2xx answer to
    /// CONNECT, a 101 to a request that asked to upgrade (RFC 9112 §6.3 rule 2, RFC 9110 §7.8).
    case tunnel
}

/// The methods the proxy treats specially; every other token is `.other` (RFC 9110 §9.1: a method
/// is any token, and methods are case-sensitive).
package enum MethodKind: Sendable, Hashable {
    case get, head, post, connect, options, trace, other
}

/// Field names the codec acts on, classified once per field by length and a case-insensitive
/// compare (no lowercasing, no hashing).
package enum KnownField: UInt8, Sendable, Hashable {
    case other
    case connection, keepAlive, proxyConnection, proxyAuthorization, proxyAuthenticate, te, trailer
    case transferEncoding, upgrade
    case host, contentLength, via, maxForwards

    /// Hop-by-hop (RFC 9110 §7.6.1): describes only the connection it arrived on.
    package var isHopByHop: Bool {
        switch self {
        case .connection, .keepAlive, .proxyConnection, .proxyAuthorization, .proxyAuthenticate, .te, .trailer,
            .transferEncoding, .upgrade:
            true
        case .other, .host, .contentLength, .via, .maxForwards:
            false
        }
    }

    /// Fields a `Connection` token may not make the proxy drop: that would change framing or routing.
    var isProtectedFromConnection: Bool { self == .contentLength || self == .host || self == .transferEncoding }

    static func classify(_ bytes: UnsafeRawBufferPointer, _ name: Range<Int>) -> KnownField {
        switch name.count {
        case 2: bytes.equalsLowercase(name, "te") ? .te : .other
        case 3: bytes.equalsLowercase(name, "via") ? .via : .other
        case 4: bytes.equalsLowercase(name, "host") ? .host : .other
        case 7:
            bytes.equalsLowercase(name, "upgrade") ? .upgrade : bytes.equalsLowercase(name, "trailer") ? .trailer : .other
        case 10:
            bytes.equalsLowercase(name, "connection")
                ? .connection : bytes.equalsLowercase(name, "keep-alive") ? .keepAlive : .other
        case 12: bytes.equalsLowercase(name, "max-forwards") ? .maxForwards : .other
        case 14: bytes.equalsLowercase(name, "content-length") ? .contentLength : .other
        case 16: bytes.equalsLowercase(name, "proxy-connection") ? .proxyConnection : .other
        case 17: bytes.equalsLowercase(name, "transfer-encoding") ? .transferEncoding : .other
        case 18: bytes.equalsLowercase(name, "proxy-authenticate") ? .proxyAuthenticate : .other
        case 19: bytes.equalsLowercase(name, "proxy-authorization") ? .proxyAuthorization : .other
        default: .other
        }
    }
}

/// One field line of a head or trailer section, as offsets into that section's bytes.
package struct FieldLine: Sendable, Hashable {
    package var name: Range<Int>
    /// Without the spaces and tabs around it (OWS).
    package var value: Range<Int>
    /// The whole line, name through CRLF: what the head writer copies.
    package var line: Range<Int>
    package var known: KnownField
    /// The field travels on: it is end-to-end and the proxy does not write its own (a head), or a
    /// trailer may carry it (RFC 9110 §6.5.1, a trailer section).
    package var kept: Bool
}

/// The tokens of a head's `Connection` fields (RFC 9110 §7.6.1): the three that are flags, and the
/// others, which name fields to drop, as ranges.
package struct ConnectionTokens: Sendable, Hashable {
    package var close = false
    package var keepAlive = false
    package var upgrade = false
    /// Other tokens, as offsets into the head.
    package var names: [Range<Int>] = []
}

/// A parsed head: a slice of the bytes read (no copy) and offsets into it.
package struct HTTP1Head: Sendable {
    package var role: Role
    /// Start line through the empty line.
    package var bytes: ByteBuffer
    /// Request only.
    package var method: Range<Int> = 0..<0
    package var methodKind: MethodKind = .other
    package var target: Range<Int> = 0..<0
    /// 0 or 1: HTTP/1.0 or HTTP/1.1 (the only versions accepted).
    package var minorVersion = 1
    /// Response only.
    package var status = 0
    package var reasonPhrase: Range<Int> = 0..<0
    package var fields: [FieldLine] = []
    package var connection = ConnectionTokens()
    package var framing: BodyFraming = .none
    /// A request that asks to switch protocols (`Upgrade` and `Connection: upgrade`), or a 101.
    package var isUpgrade = false
    /// The request's TE field accepts trailers.
    package var acceptsTrailers = false
    /// The connection stays open after this message (RFC 9112 §9.3).
    package var keepAlive = true

    /// A 1xx other than 101: another head follows for the same request.
    package var isInterim: Bool { role == .response && status >= 100 && status < 200 && status != 101 }

    package func string(_ range: Range<Int>) -> String {
        bytes.withUnsafeReadableBytes { $0.string(range) }
    }

    package var methodString: String { string(method) }
    package var targetString: String { string(target) }

    /// Every field as (name, value) text, in order, in one array (what NIOHTTP1's `HTTPHeaders`
    /// is made from).
    package var fieldList: [(String, String)] { bytes.withUnsafeReadableBytes { $0.fieldList(fields) } }

    /// The values of the fields of a known name, in order.
    package func values(_ field: KnownField) -> [String] {
        bytes.withUnsafeReadableBytes { raw in fields.filter { $0.known == field }.map { raw.string($0.value) } }
    }

    /// Whether a field of a known name is present.
    package func has(_ field: KnownField) -> Bool {
        fields.contains { $0.known == field }
    }

    /// The values of the fields named `name` (ASCII case-insensitive), in order.
    package func values(named name: String) -> [String] {
        bytes.withUnsafeReadableBytes { raw in
            fields.filter { raw.equalsIgnoringCase($0.name, name) }.map { raw.string($0.value) }
        }
    }

    /// The value of the first field named `name` (ASCII case-insensitive), without an array.
    package func firstValue(named name: String) -> String? {
        bytes.withUnsafeReadableBytes { raw in
            for field in fields where raw.equalsIgnoringCase(field.name, name) { return raw.string(field.value) }
            return nil
        }
    }
}

/// A trailer section (RFC 9112 §7.1.2): its bytes, from the first field line through the empty
/// line, and its fields; `kept` marks those a trailer may carry on.
package struct HTTP1Trailers: Sendable {
    package var bytes: ByteBuffer
    package var fields: [FieldLine]

    /// As `HTTP1Head.fieldList`.
    package var fieldList: [(String, String)] { bytes.withUnsafeReadableBytes { $0.fieldList(fields) } }
}

extension UnsafeRawBufferPointer {
    func fieldList(_ fields: [FieldLine]) -> [(String, String)] {
        var list: [(String, String)] = []
        list.reserveCapacity(fields.count)
        for field in fields { list.append((string(field.name), string(field.value))) }
        return list
    }
}
