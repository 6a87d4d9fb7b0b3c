/// What the first bytes of a transparently intercepted connection say about where the client meant
/// to go. A pure function of the bytes received so far (the handler keeps at most `limit` of them),
/// so every outcome is decided from bytes alone and tested byte by byte.
///
/// - a TLS ClientHello, possibly split over several records and TCP segments: its SNI host name;
/// - an HTTP/1.x request head: its Host header;
/// - anything else: no name (relayed to the original destination as is).
package enum TransparentPeek: Equatable, Sendable {
    /// More bytes are needed to decide (the handler waits, up to its deadline and `limit`).
    case needMore
    /// A complete ClientHello; nil when it carries no (valid) server_name.
    case tls(serverName: String?)
    /// A complete HTTP/1.x request head; nil when it has no (valid) Host header.
    case http(host: String?)
    /// Not TLS, not HTTP: a protocol the proxy does not read.
    case unknown
    /// Looked like TLS but is not a well-formed ClientHello.
    case malformed(String)
    /// The ClientHello or request head would not fit in `limit` bytes.
    case tooLarge

    /// The longest ClientHello or request head read (16 KiB).
    static let limit = 16 * 1024
    /// The most bytes held before deciding: `limit` plus room for the headers of the records a
    /// ClientHello is split into. A connection that sends this much undecided is `.tooLarge`.
    package static let bufferLimit = limit + 1024

    static let methods: [[UInt8]] = ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE"].map { Array("\($0) ".utf8) }

    /// Classifies `bytes`, everything the client sent so far (at most `limit` bytes are looked at).
    package static func classify(_ bytes: some Collection<UInt8>) -> TransparentPeek {
        let bytes = Array(bytes.prefix(bufferLimit))
        let outcome = classifyPrefix(bytes)
        return outcome == .needMore && bytes.count >= bufferLimit ? .tooLarge : outcome
    }

    private static func classifyPrefix(_ bytes: [UInt8]) -> TransparentPeek {
        guard let first = bytes.first else { return .needMore }
        if first == 0x16 { return ClientHelloParser.parse(bytes) }
        for method in methods {
            let common = min(method.count, bytes.count)
            if bytes[0..<common].elementsEqual(method[0..<common]) {
                return common < method.count ? .needMore : HTTPHeadPeek.host(bytes)
            }
        }
        return .unknown
    }

    /// A name usable as an upstream host: a DNS name of letters, digits, hyphens (not at a label's
    /// ends), underscores and dots (at most 253 bytes, labels of 1...63), lower-cased. IP literals
    /// and anything else give nil.
    static func hostName(_ raw: some Collection<UInt8>) -> String? {
        var name = Array(raw)
        if name.last == UInt8(ascii: ".") { name.removeLast() }
        guard !name.isEmpty, name.count <= 253 else { return nil }
        var label = 0
        var allDigitsOrDots = true
        var previous: UInt8 = UInt8(ascii: ".")
        for index in name.indices {
            let byte = name[index]
            switch byte {
            case UInt8(ascii: "."):
                guard label > 0, previous != UInt8(ascii: "-") else { return nil }
                label = 0
                previous = byte
                continue
            case UInt8(ascii: "-"):
                guard label > 0 else { return nil }
                allDigitsOrDots = false
            case UInt8(ascii: "A")...UInt8(ascii: "Z"):
                name[index] = byte + 32
                allDigitsOrDots = false
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "_"):
                allDigitsOrDots = false
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                break
            default:
                return nil
            }
            previous = byte
            label += 1
            guard label <= 63 else { return nil }
        }
        guard label > 0, previous != UInt8(ascii: "-"), !allDigitsOrDots else { return nil }
        return String(decoding: name, as: UTF8.self)
    }
}
