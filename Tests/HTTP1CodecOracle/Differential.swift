import HTTP1Codec

/// The differential check: the new codec and today's stack must agree on every input (the same
/// accept/reject verdict and error kind, the same message boundaries, start lines, fields, body
/// bytes and trailers), whatever reads the input arrives in.
///
/// Differences kept by design, each with the clause that makes the codec right (they are also in
/// the codec tests' doc comment and the report):
///
/// 1. Extension methods. llhttp knows a fixed list of methods and refuses others ("invalid
///    method", 400); the codec accepts any token, case-sensitively (`FOO`, `get`). RFC 9110 §9.1:
///    "method = token", extensible, and an intermediary forwards methods it does not know
///    (RFC 9110 §16.1.1 expects new methods to pass through intermediaries).
/// 2. CONNECT with a Transfer-Encoding that cannot frame a body (`gzip`, `chunked, x`, or on
///    HTTP/1.0). llhttp skips its framing checks for CONNECT and the machine never applies
///    MessageFraming to it, so today it becomes a tunnel; the codec refuses it like any request.
///    RFC 9112 §6.3 rule 4 ("If a Transfer-Encoding header field is present in a request and the
///    chunked transfer coding is not the final encoding ... the server MUST respond with 400 ...
///    and then close the connection") and §6.1 (Transfer-Encoding in HTTP/1.0 is faulty framing)
///    apply to every request.
/// 3. Responses to CONNECT. NIO skips the body of every response to CONNECT; the codec only of a
///    2xx, which makes the connection a tunnel whatever its framing fields say. RFC 9112 §6.3
///    rule 2 and RFC 9110 §9.3.6 ("A client MUST ignore any Content-Length or Transfer-Encoding
///    header fields received in a successful response to CONNECT"); a non-2xx answer to CONNECT
///    is an ordinary response with a body framed by its fields (§6.3 rules 4-8).
/// 4. Size limits at their edges. llhttp counts the bytes of the target, names and values only
///    (and head and trailer fields together); the codec counts the head's bytes as sent, CRLFs and
///    start line included, each section on its own, and answers 414 as soon as the target passes
///    8192 bytes (today: once the head is complete, after any other error in it). Where a limit
///    lies is the recipient's choice (RFC 9112 §3: 414 for a target longer than it wishes to
///    parse; RFC 9110 §15.5.15; RFC 6585 §5 for 431); the verdict near a limit may differ in kind
///    (431/414 against 400) but never accept against refuse below 72 KiB.
package enum Differential {
    /// nil when both stacks agree on `input`, else a report for a failure message.
    package static func check(_ input: DifferentialInput, role: Role) -> String? {
        let codec = CodecRunner.transcript(input, role: role)
        // The codec's own invariant: the reads the bytes arrive in change nothing.
        var whole = input
        whole.splits = []
        let unsplit = CodecRunner.transcript(whole, role: role)
        if unsplit != codec {
            return report("the codec's result depends on the reads", input, codec: codec, other: unsplit, otherName: "codec, one read")
        }
        let legacy = role == .request ? LegacyRunner.requestTranscript(input) : LegacyRunner.responseTranscript(input)
        guard let why = disagreement(codec: codec, legacy: legacy, input: input, role: role) else { return nil }
        return report(why, input, codec: codec, other: legacy, otherName: "today's stack")
    }

    static func report(_ why: String, _ input: DifferentialInput, codec: Transcript, other: Transcript, otherName: String) -> String {
        """
        \(why)
        input (\(input.bytes.count) bytes, reads end at \(input.splits), request \(input.method.rawValue), upgrade asked: \(input.upgradeRequested)):
        \(String(decoding: input.bytes.prefix(2000), as: UTF8.self).debugDescription)
        codec:
        \(codec)
        \(otherName):
        \(other)
        """
    }

    /// The methods llhttp parses in a request (its HTTP_METHOD_MAP).
    static let llhttpMethods: Set<String> = [
        "DELETE", "GET", "HEAD", "POST", "PUT", "CONNECT", "OPTIONS", "TRACE", "COPY", "LOCK", "MKCOL", "MOVE",
        "PROPFIND", "PROPPATCH", "SEARCH", "UNLOCK", "BIND", "REBIND", "UNBIND", "ACL", "REPORT", "MKACTIVITY",
        "CHECKOUT", "MERGE", "M-SEARCH", "NOTIFY", "SUBSCRIBE", "UNSUBSCRIBE", "PATCH", "PURGE", "MKCALENDAR",
        "LINK", "UNLINK", "SOURCE", "QUERY",
    ]

    package static func disagreement(codec: Transcript, legacy: Transcript, input: DifferentialInput, role: Role) -> String? {
        // The verdicts are compared by kind: the texts name the same flaw in different words
        // when llhttp and the codec stop at different bytes (unit tests check the texts).
        if codec.withoutReason == legacy.withoutReason { return nil }
        let agreed = zip(codec.messages, legacy.messages).prefix { $0 == $1 }.count
        let codecNext = codec.messages.count > agreed ? codec.messages[agreed] : nil
        let legacyNext = legacy.messages.count > agreed ? legacy.messages[agreed] : nil

        // 1. An extension method: llhttp stops at its first byte that spells no method it knows;
        // the codec takes the token (and waits for its end, or refuses the message for another flaw).
        if case .error(_, let reason) = legacy.outcome, reason.hasSuffix("invalid method"), legacyNext == nil {
            if let next = codecNext, !llhttpMethods.contains(next.method) { return nil }
            if codecNext == nil && (codec.outcome == .truncated || codec.errorKind != nil) { return nil }
        }
        // 2. CONNECT with a Transfer-Encoding that cannot frame a body.
        if case .error(let kind, let reason) = codec.outcome, codecNext == nil,
            kind == "malformed_request" || kind == "not_implemented", reason.contains("ransfer"),
            let next = legacyNext, next.method == "CONNECT", legacy.messages.count == agreed + 1, legacy.outcome == .stopped("tunnel")
        {
            return nil
        }
        if role == .response && input.method == .CONNECT {
            // 3. The heads agree up to the first final one; after it NIO has no body for any answer
            // to CONNECT, and for a 2xx today's MessageRewriter still judges framing fields that RFC
            // 9110 §9.3.6 says to ignore.
            let codecFinal = codec.messages.firstIndex { $0.status >= 200 }
            let legacyFinal = legacy.messages.firstIndex { $0.status >= 200 }
            if let c = codecFinal, c == legacyFinal, heads(codec.messages[...c]) == heads(legacy.messages[...c]) {
                return nil
            }
            if let c = codecFinal, (200..<300).contains(codec.messages[c].status), legacyFinal == nil, agreed == c,
                case .error(_, let reason) = legacy.outcome, reason.hasPrefix("the origin sent a response that cannot be relayed")
            {
                return nil
            }
        }
        // 4. A size limit near its edge.
        if isLimit(codec.outcome) || isLimit(legacy.outcome) {
            let lines = input.bytes.lazy.filter { $0 == 0x0A }.count
            let fields = role == .request ? 256 : 512
            if input.bytes.count > 72 * 1024 || lines >= fields - 2 || codec.outcome.isTargetTooLong {
                if codec.errorKind != nil && legacy.errorKind != nil { return nil }
            }
        }
        // 5. A target llhttp's URL grammar refuses but that is URI characters: its form is judged
        // by RequestTarget after the codec.
        if case .error(_, let reason) = legacy.outcome, reason.hasSuffix("invalid request target"), legacy.messages.count == agreed,
            codec.messages.count > agreed || codec.errorKind != nil || codec.outcome == .truncated
        {
            return nil
        }
        // 6. BWS in chunk extensions, which llhttp refuses (in a body llhttp did not finish).
        if legacy.errorKind != nil, legacy.messages.last.map({ !$0.ended }) ?? false, hasChunkExtensionBWS(input.bytes) {
            return nil
        }
        // 7. The codec refused a message before its end; llhttp waited for more bytes.
        if codec.errorKind != nil, legacy.outcome == .truncated, codec.messages.count == agreed || legacy.messages.count == agreed {
            return nil
        }
        // 8. A tab in the OWS around a Content-Length value.
        if case .error(_, let reason) = legacy.outcome, reason.hasSuffix("invalid Content-Length"),
            codec.errorKind == nil || codec.messages.count > agreed, hasTabInContentLength(input.bytes)
        {
            return nil
        }
        // 9. A Content-Length of more than 18 digits where no body follows (HEAD, 1xx, 204, 304).
        if case .error(_, let reason) = codec.outcome, reason.lowercased().contains("content-length"), codecNext == nil,
            hasLongContentLength(input.bytes)
        {
            return nil
        }
        // 10. A control byte (DEL among them) in a reason phrase.
        if case .error(_, let reason) = codec.outcome, reason.contains("status code"), codecNext == nil,
            lines(input.bytes).contains(where: { $0.starts(with: Array("HTTP/".utf8)) && $0.contains(where: { $0 == 0x7F || ($0 < 0x20 && $0 != 0x09 && $0 != 0x0D) }) })
        {
            return nil
        }
        // 11. More than one space between the parts of a start line.
        if codec.errorKind != nil, codecNext == nil,
            lines(input.bytes).contains(where: { line in
                line.contains(where: { $0 == 0x09 }) || zip(line, line.dropFirst()).contains { $0 == 0x20 && $1 == 0x20 }
            })
        {
            return nil
        }
        // 12. Spaces after a Content-Length value: NIO keeps them in the value and MessageFraming
        // refuses "5 "; the codec trims OWS like any value's.
        if case .error(_, let reason) = legacy.outcome, reason.contains("invalid Content-Length '") || reason.hasSuffix("relayed: invalid Content-Length"),
            legacy.messages.count == agreed, codecNext != nil || codec.errorKind == nil
        {
            if lines(input.bytes).contains(where: { line in
                String(decoding: line.prefix(15), as: UTF8.self).lowercased() == "content-length:"
                    && line.dropLast(line.last == 0x0D ? 1 : 0).last.map({ $0 == 0x20 || $0 == 0x09 }) == true
            }) {
                return nil
            }
        }
        // 13. `close` with `keep-alive` on HTTP/1.0: llhttp keeps the connection, the codec closes.
        if codec.outcome == .stopped("close"), codec.messages.count == agreed, let last = codec.messages.last, last.minorVersion == 0 {
            let connection = last.fields.filter { $0.lowercased().hasPrefix("connection:") || $0.lowercased().hasPrefix("proxy-connection:") }
                .joined(separator: ",").lowercased()
            if connection.contains("close") && connection.contains("keep-alive") { return nil }
        }
        // 14. A bare CR or LF in a head or before one, which llhttp takes in places (in responses,
        // and before any message); the codec refuses the message.
        if codec.errorKind != nil, codecNext == nil, hasBareLineEnding(input.bytes) {
            return nil
        }
        // 15. Empty lines after the final response: llhttp eats them (in the same read), the codec
        // refuses any byte after a response, so the connection is closed rather than pooled.
        if case .error(_, let reason) = codec.outcome, reason.hasSuffix("after the end of its response"), legacy.outcome == .clean,
            codec.messages == legacy.messages, let last = input.bytes.lastIndex(where: { $0 != 0x0D && $0 != 0x0A }),
            input.bytes.count - last - 1 > 0
        {
            return nil
        }
        if codec.messages != legacy.messages {
            return "the messages differ (the first \(agreed) agree)"
        }
        return "the outcomes differ"
    }

    /// Some chunk-size line has spaces or tabs around its `;` or `=` (BWS, RFC 9112 §7.1.1).
    static func hasChunkExtensionBWS(_ bytes: [UInt8]) -> Bool {
        for line in bytes.split(separator: 0x0A) {
            guard let first = line.first, ByteClassHex.isHex(first), let semicolon = line.firstIndex(of: UInt8(ascii: ";")) else { continue }
            let size = line[..<semicolon]
            if size.contains(0x20) || size.contains(0x09) || line[semicolon...].contains(0x20) || line[semicolon...].contains(0x09) {
                return true
            }
        }
        return false
    }

    static func lines(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        bytes.split(separator: 0x0A)
    }

    static func hasLongContentLength(_ bytes: [UInt8]) -> Bool {
        lines(bytes).contains { line in
            String(decoding: line.prefix(15), as: UTF8.self).lowercased() == "content-length:"
                && line.dropFirst(15).filter({ (0x30...0x39).contains($0) }).count > 18
        }
    }

    /// Some CR not followed by LF, or LF not preceded by CR.
    static func hasBareLineEnding(_ bytes: [UInt8]) -> Bool {
        for index in bytes.indices {
            if bytes[index] == 0x0D && index + 1 < bytes.count && bytes[index + 1] != 0x0A { return true }
            if bytes[index] == 0x0A && (index == 0 || bytes[index - 1] != 0x0D) { return true }
        }
        return false
    }

    static func hasTabInContentLength(_ bytes: [UInt8]) -> Bool {
        bytes.split(separator: 0x0A).contains { line in
            String(decoding: line.prefix(15), as: UTF8.self).lowercased() == "content-length:" && line.contains(0x09)
        }
    }

    static func heads(_ messages: ArraySlice<Transcript.Message>) -> [String] {
        messages.map { "\($0.status) \($0.minorVersion) \($0.fields)" }
    }

    static func isLimit(_ outcome: Transcript.Outcome) -> Bool {
        guard case .error(let kind, let reason) = outcome else { return false }
        return kind == "headers_too_large" || kind == "uri_too_long" || reason.contains("too large")
    }
}

enum ByteClassHex {
    static func isHex(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }
}

extension Transcript {
    var withoutReason: Transcript {
        var copy = self
        if case .error(let kind, _) = outcome { copy.outcome = .error(kind: kind, reason: "") }
        return copy
    }
}

extension Transcript.Outcome {
    var isTargetTooLong: Bool {
        if case .error("uri_too_long", _) = self { return true }
        return false
    }
}
