/// What the fields of a head decide: framing (RFC 9112 §6), persistence (§9.3), which fields travel
/// on (RFC 9110 §7.6.1) and which trailer fields may (RFC 9110 §6.5.1). The reasons are today's
/// texts (MessageFraming, RequestParseFailure).
extension HeadParser {
    /// Looks at one field line of a head as it completes: the fields whose values matter are
    /// read once, here, and the conflicts that make framing ambiguous are refused at once.
    mutating func survey(_ raw: UnsafeRawBufferPointer, _ field: FieldLine) -> HTTP1CodecError? {
        switch field.known {
        case .contentLength:
            // One Content-Length field, 1 to 18 digits (no sign, list or spaces inside): a
            // duplicate, even with the same value, and one next to Transfer-Encoding are refused
            // (RFC 9112 §6.3 rule 3 and 5, the framing suite).
            guard contentLength == nil, codings == nil else { return Flaw.unexpectedContentLength.error(role) }
            guard let length = Self.contentLength(raw, field.value) else { return Flaw.contentLength.error(role) }
            contentLength = length
        case .transferEncoding:
            guard contentLength == nil else { return Flaw.unexpectedContentLength.error(role) }
            var list = codings ?? []
            raw.forEachListElement(field.value) { list.append($0) }
            codings = list
            // RFC 9110 §5.6.1 would skip the empty element of `chunked,`; llhttp does not take
            // chunked as final there (a request: 400; a response: read until close). Parsers
            // that disagree on framing are the smuggling vector: refused either way.
            codingsEndEmpty = field.value.isEmpty || raw[field.value.upperBound - 1] == UInt8(ascii: ",")
        case .connection:
            raw.forEachListElement(field.value) { token in
                if raw.equalsLowercase(token, "close") {
                    head.connection.close = true
                } else if raw.equalsLowercase(token, "keep-alive") {
                    head.connection.keepAlive = true
                } else if raw.equalsLowercase(token, "upgrade") {
                    head.connection.upgrade = true
                } else {
                    head.connection.names.append(token)
                }
            }
        case .proxyConnection:
            // Not standard (RFC 9112 Appendix C.2.2), but HTTP/1.0 clients of proxies send it for
            // persistence, and llhttp honors it: its close and keep-alive count as Connection's.
            raw.forEachListElement(field.value) { token in
                if raw.equalsLowercase(token, "close") {
                    head.connection.close = true
                } else if raw.equalsLowercase(token, "keep-alive") {
                    head.connection.keepAlive = true
                }
            }
        case .upgrade:
            hasUpgradeField = true
        case .te:
            raw.forEachListElement(field.value) { coding in
                if raw.equalsLowercase(coding, "trailers")
                    || (coding.count > 8 && raw.equalsLowercase(coding.prefix(9), "trailers;"))
                {
                    head.acceptsTrailers = true
                }
            }
        default:
            break
        }
        return nil
    }

    /// 1*DIGIT, at most 18 digits (MessageFraming's rule: no overflow, leading zeros count).
    static func contentLength(_ raw: UnsafeRawBufferPointer, _ value: Range<Int>) -> Int? {
        guard !value.isEmpty, value.count <= 18 else { return nil }
        var number = 0
        for index in value {
            let digit = raw[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            number = number * 10 + Int(digit)
        }
        return number
    }

    /// The head is complete: its framing, persistence and kept fields.
    mutating func finishHead(_ raw: UnsafeRawBufferPointer) -> HTTP1CodecError? {
        let minor = head.minorVersion
        head.keepAlive = minor == 1 ? !head.connection.close : head.connection.keepAlive && !head.connection.close
        switch role {
        case .request:
            head.methodKind = Self.methodKind(raw, head.method)
            if let error = requestFraming(raw) { return error }
            if head.methodKind == .connect {
                // RFC 9110 §9.3.6: no content; what follows the head belongs to the tunnel.
                head.framing = .tunnel
            } else {
                head.isUpgrade = hasUpgradeField && head.connection.upgrade
            }
        case .response:
            if let error = responseFraming(raw) { return error }
        }
        markKeptFields(raw)
        return nil
    }

    /// RFC 9112 §6.1 and §6.3, in MessageFraming's order. Applies to every request, CONNECT too
    /// (it has no content, but a Transfer-Encoding that cannot frame one is still refused).
    private mutating func requestFraming(_ raw: UnsafeRawBufferPointer) -> HTTP1CodecError? {
        guard let codings else {
            head.framing = contentLength.map { $0 == 0 ? .none : .contentLength($0) } ?? .none
            return nil
        }
        if head.minorVersion == 0 {
            return HTTP1CodecError(.malformedRequest, "Transfer-Encoding is not allowed in an HTTP/1.0 request (RFC 9112 §6.1)")
        }
        guard let last = codings.last else { return HTTP1CodecError(.malformedRequest, "empty Transfer-Encoding") }
        for coding in codings where !coding.allSatisfy({ ByteClass.isToken(raw[$0]) }) {
            return HTTP1CodecError(.malformedRequest, "invalid transfer coding '\(sanitized(Self.lowercased(raw, coding), limit: 40))'")
        }
        guard raw.equalsLowercase(last, "chunked"), !codingsEndEmpty,
            !codings.dropLast().contains(where: { raw.equalsLowercase($0, "chunked") })
        else {
            return HTTP1CodecError(.malformedRequest, "request Transfer-Encoding must end in chunked, applied once (RFC 9112 §6.3)")
        }
        if codings.count > 1 {
            let other = Self.joined(raw, codings.dropLast())
            return HTTP1CodecError(
                .notImplemented,
                "transfer coding '\(sanitized(other, limit: 40))' is not implemented; send the body with chunked alone"
            )
        }
        head.framing = .chunked
        return nil
    }

    /// RFC 9112 §6.3 for a response: the request's method and the status decide before the fields do.
    private mutating func responseFraming(_ raw: UnsafeRawBufferPointer) -> HTTP1CodecError? {
        let status = head.status
        if status == 101 {
            guard context.upgradeRequested else { return .unaskedSwitch }
            head.isUpgrade = true
            head.framing = .tunnel
            return nil
        }
        if context.method == .connect && status >= 200 && status < 300 {
            head.framing = .tunnel
            return nil
        }
        if context.method == .head || status < 200 || status == 204 || status == 304 {
            // No body, whatever the fields say (HEAD and 304 may advertise what a GET would have used).
            head.framing = .none
            return nil
        }
        if let codings {
            if head.minorVersion == 0 {
                return HTTP1CodecError(.invalidResponse, "Transfer-Encoding in an HTTP/1.0 response", isUnrelayable: true)
            }
            // The proxy forwards no TE but `trailers`, so any coding but a lone chunked broke the protocol.
            guard codings.count == 1, raw.equalsLowercase(codings[0], "chunked"), !codingsEndEmpty else {
                let text = sanitized(Self.joined(raw, codings[...]) + (codingsEndEmpty && !codings.isEmpty ? "," : ""), limit: 40)
                return HTTP1CodecError(.invalidResponse, "unsupported transfer coding '\(text)'", isUnrelayable: true)
            }
            head.framing = .chunked
        } else if let contentLength {
            head.framing = contentLength == 0 ? .none : .contentLength(contentLength)
        } else {
            head.framing = .untilClose
        }
        return nil
    }

    /// Marks the fields that travel on. A request loses its hop-by-hop fields, the fields its
    /// Connection names, Host and Content-Length (the proxy writes its own); a response keeps its
    /// Content-Length, and only a 101 keeps Upgrade.
    private mutating func markKeptFields(_ raw: UnsafeRawBufferPointer) {
        let names = head.connection.names
        // Many tokens: one set lookup per field instead of one comparison per token and field.
        let nameSet: Set<String>? = names.count > 8 ? Set(names.map { Self.lowercased(raw, $0) }) : nil
        func named(_ name: Range<Int>) -> Bool {
            if let nameSet { return nameSet.contains(Self.lowercased(raw, name)) }
            return names.contains { raw.equalsIgnoringCase($0, name) }
        }
        let request = role == .request
        for index in head.fields.indices {
            let field = head.fields[index]
            let kept: Bool
            if field.known == .upgrade && head.isUpgrade {
                kept = true
            } else if field.known.isHopByHop || (request && (field.known == .host || field.known == .contentLength)) {
                kept = false
            } else if field.known.isProtectedFromConnection {
                kept = true
            } else {
                kept = names.isEmpty || !named(field.name)
            }
            head.fields[index].kept = kept
        }
    }

    /// RFC 9110 §6.5.1: a trailer must not carry framing, routing, request modifiers,
    /// authentication, response control or content-processing fields; hop-by-hop fields never
    /// travel. MessageFraming's list, by name.
    mutating func keepForwardableTrailers(_ raw: UnsafeRawBufferPointer) -> HTTP1CodecError? {
        for index in head.fields.indices {
            let field = head.fields[index]
            head.fields[index].kept = field.known == .other && !Self.isForbiddenInTrailer(Self.lowercased(raw, field.name))
        }
        return nil
    }

    static func isForbiddenInTrailer(_ lower: String) -> Bool {
        forbiddenTrailerNames.contains(lower) || lower.hasPrefix("if-") || lower.hasPrefix("content-")
    }

    private static let forbiddenTrailerNames: Set<String> = [
        "max-forwards", "expect", "range", "pragma", "cache-control",
        "authorization", "www-authenticate", "authentication-info", "proxy-authentication-info", "cookie", "set-cookie",
        "age", "expires", "date", "location", "retry-after", "vary", "warning",
        "trailer", "transfer-encoding",
    ]

    static func methodKind(_ raw: UnsafeRawBufferPointer, _ method: Range<Int>) -> MethodKind {
        // Methods are case-sensitive (RFC 9110 §9.1): "get" is an extension method, not GET.
        switch method.count {
        case 3: return raw.equals(method, "GET") ? .get : .other
        case 4: return raw.equals(method, "HEAD") ? .head : raw.equals(method, "POST") ? .post : .other
        case 5: return raw.equals(method, "TRACE") ? .trace : .other
        case 7: return raw.equals(method, "CONNECT") ? .connect : raw.equals(method, "OPTIONS") ? .options : .other
        default: return .other
        }
    }

    static func lowercased(_ raw: UnsafeRawBufferPointer, _ range: Range<Int>) -> String {
        String(decoding: range.lazy.map { ByteClass.lowered(raw[$0]) }, as: UTF8.self)
    }

    private static func joined(_ raw: UnsafeRawBufferPointer, _ ranges: ArraySlice<Range<Int>>) -> String {
        ranges.map { lowercased(raw, $0) }.joined(separator: ", ")
    }
}
