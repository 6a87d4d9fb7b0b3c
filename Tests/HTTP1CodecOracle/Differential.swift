import HTTP1Codec

/// The differential check: the new codec and today's stack must agree on every input (the same
/// accept/reject verdict and error kind, the same message boundaries, start lines, fields, body
/// bytes and trailers), whatever reads the input arrives in; and the codec must give the same
/// result for any cut of the input into reads.
///
/// `disagreement` allows the differences kept by design, numbered as in the list (with the RFC
/// clause that makes the codec right) in Tests/HTTP1CodecTests/DifferentialTests.swift. Each rule
/// is as narrow as the input lets it be told: a rule that would hide a real difference is a bug.
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
        // 16. A chunk extension outside RFC 9112 §7.1.1's grammar (an empty name, a bare `=`, an
        // unterminated quoted string...), which llhttp lets through.
        if case .error(_, let reason) = codec.outcome, reason.contains("chunk size"), hasChunkExtension(input.bytes) {
            return nil
        }
        // 17. A status code outside 100...599, which llhttp takes (RFC 9110 §15: invalid).
        if case .error(_, let reason) = codec.outcome, reason.contains("status code"), codecNext == nil,
            let next = legacyNext, !(100...599).contains(next.status)
        {
            return nil
        }
        // 18. llhttp refuses a field value at its first wrong byte, the codec at the line's end:
        // with the line (and head) ended, the codec must refuse too.
        if codec.outcome == .truncated, let kind = legacy.errorKind, codec.messages.count == agreed, legacy.messages.count == agreed {
            var ended = input
            ended.bytes += Array("\r\n\r\n".utf8)
            ended.splits = []
            if CodecRunner.transcript(ended, role: role).errorKind == kind { return nil }
        }
        // 19. After an HTTP/1.0 1xx llhttp takes the connection as closed and refuses the final
        // response; the codec reads it.
        if case .error(_, let reason) = legacy.outcome, reason.contains("after completed connection: close message"),
            let last = legacy.messages.last, last.minorVersion == 0, (100..<200).contains(last.status), legacy.messages.count == agreed
        {
            return nil
        }
        // 20. A Transfer-Encoding field ending in an empty element (`chunked,`): llhttp reads a
        // response with it until the close while MessageFraming takes it for chunked; the codec
        // refuses it (requests: both refuse).
        if case .error(_, let reason) = codec.outcome, codecNext == nil,
            reason.contains("transfer coding") || reason.contains("Transfer-Encoding must end in chunked"),
            hasTransferEncodingEndingEmpty(input.bytes)
        {
            return nil
        }
        // 21. A framing field in a response's trailer section: llhttp lets Transfer-Encoding
        // through there (it refuses it in a request's), the codec refuses it in both.
        if case .error(_, let reason) = codec.outcome, role == .response, reason.contains("unknown (http_parser error)")
            || reason.contains("content-length"), hasFramingFieldInTrailers(input.bytes)
        {
            return nil
        }
        // 7. The codec refused a message before its end; llhttp waited for more bytes.
        if codec.errorKind != nil, legacy.outcome == .truncated, codec.messages.count == agreed || legacy.messages.count == agreed {
            return nil
        }
        // 8. A tab in the OWS around a Content-Length value (refused by MessageFraming, or by
        // llhttp itself, as on a 101 answering an upgrade).
        if case .error(_, let reason) = legacy.outcome,
            reason.hasSuffix("invalid Content-Length") || reason.hasSuffix("(invalid character in content-length header)"),
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

    /// Some chunk-size line has an extension.
    static func hasChunkExtension(_ bytes: [UInt8]) -> Bool {
        lines(bytes).contains { line in line.first.map(ByteClassHex.isHex) == true && line.contains(UInt8(ascii: ";")) }
    }

    /// A Transfer-Encoding or Content-Length line after a last-chunk line ("0", "0;ext").
    static func hasFramingFieldInTrailers(_ bytes: [UInt8]) -> Bool {
        var afterLastChunk = false
        for line in lines(bytes) {
            let text = String(decoding: line, as: UTF8.self).lowercased()
            if text.hasPrefix("0\r") || text.hasPrefix("0;") || text.hasPrefix("00") { afterLastChunk = true }
            if afterLastChunk && (text.hasPrefix("transfer-encoding:") || text.hasPrefix("content-length:")) { return true }
        }
        return false
    }

    /// Some Transfer-Encoding line is empty or ends in a comma.
    static func hasTransferEncodingEndingEmpty(_ bytes: [UInt8]) -> Bool {
        lines(bytes).contains { line in
            guard String(decoding: line.prefix(18), as: UTF8.self).lowercased() == "transfer-encoding:" else { return false }
            let value = line.dropFirst(18).filter { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }
            return value.isEmpty || value.last == UInt8(ascii: ",")
        }
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
