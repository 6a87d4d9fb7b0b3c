import NIOHTTP1
import ProxyKit

/// How a message body is delimited on the wire.
package enum BodyFraming: Sendable, Equatable {
    case none
    case contentLength
    case chunked
    /// Ends when the connection closes (responses only).
    case closeDelimited
}

/// The `Via` value this proxy adds (RFC 9110 §7.6.3), built once for the common protocol versions
/// instead of once per message.
package struct ViaHeader: Sendable {
    package let pseudonym: String
    private let http11: String
    private let http10: String

    package init(pseudonym: String) {
        self.pseudonym = pseudonym
        self.http11 = "1.1 \(pseudonym)"
        self.http10 = "1.0 \(pseudonym)"
    }

    /// "major.minor pseudonym" for the version the message arrived with.
    package func value(receivedWith version: HTTPVersion) -> String {
        switch (version.major, version.minor) {
        case (1, 1): http11
        case (1, 0): http10
        default: "\(version.major).\(version.minor) \(pseudonym)"
        }
    }
}

/// Pure header rewriting for both directions (RFC 9110 §7.6: hop-by-hop fields, Via; RFC 9112 §6: framing).
///
/// Runs twice per forwarded request, so it classifies each field name once, by length and an ASCII
/// case-insensitive byte compare, without lowercasing or hashing, and it only splits a field's
/// value for the few fields whose values matter here.
package enum MessageRewriter {
    /// Field names with a meaning for the proxy: hop-by-hop fields (they only describe the
    /// connection they arrived on and never travel further) and the framing and routing fields.
    enum FieldName: Equatable {
        case connection, keepAlive, proxyConnection, proxyAuthorization, proxyAuthenticate, te, trailer
        case transferEncoding, upgrade
        case host, contentLength, via

        var isHopByHop: Bool {
            switch self {
            case .connection, .keepAlive, .proxyConnection, .proxyAuthorization, .proxyAuthenticate, .te, .trailer,
                .transferEncoding, .upgrade:
                true
            case .host, .contentLength, .via:
                false
            }
        }

        /// Fields a `Connection` header may not make us drop: dropping them would change framing or routing.
        var isProtectedFromConnection: Bool { self == .contentLength || self == .host || self == .transferEncoding }

        init?(_ name: String) {
            let found: FieldName?
            switch name.utf8.count {
            case 2: found = ASCII.equalsLowercase(name, "te") ? .te : nil
            case 3: found = ASCII.equalsLowercase(name, "via") ? .via : nil
            case 4: found = ASCII.equalsLowercase(name, "host") ? .host : nil
            case 7:
                found = ASCII.equalsLowercase(name, "upgrade") ? .upgrade : ASCII.equalsLowercase(name, "trailer") ? .trailer : nil
            case 10:
                found = ASCII.equalsLowercase(name, "connection") ? .connection : ASCII.equalsLowercase(name, "keep-alive") ? .keepAlive : nil
            case 14: found = ASCII.equalsLowercase(name, "content-length") ? .contentLength : nil
            case 16: found = ASCII.equalsLowercase(name, "proxy-connection") ? .proxyConnection : nil
            case 17: found = ASCII.equalsLowercase(name, "transfer-encoding") ? .transferEncoding : nil
            case 18: found = ASCII.equalsLowercase(name, "proxy-authenticate") ? .proxyAuthenticate : nil
            case 19: found = ASCII.equalsLowercase(name, "proxy-authorization") ? .proxyAuthorization : nil
            default: found = nil
            }
            guard let found else { return nil }
            self = found
        }
    }

    /// Whether `name` is a hop-by-hop field (never forwarded as it is).
    package static func isHopByHop(_ name: String) -> Bool { FieldName(name)?.isHopByHop ?? false }

    /// The values of the fields the rewriter decides on, gathered in one pass over the head.
    /// Linear in the size of the head: many `Connection` tokens go into a set
    /// (`ConnectionTokens`), so a head of many fields and many tokens costs no more than its length.
    struct Survey {
        /// Lowercased tokens of all `Connection` fields.
        var connectionTokens = ConnectionTokens()
        /// Lowercased codings of all `Transfer-Encoding` fields, in order (several fields are one
        /// list); nil when there is no such field, empty when the fields hold no coding.
        var transferCodings: [String]?
        /// The values of every Content-Length field, as sent.
        var contentLengths = MessageFraming.FieldValues()
        var hasUpgrade = false
        var teTrailers = false
        /// Some field other than Host and Content-Length must be dropped or changed.
        var needsFiltering = false

        init(_ headers: HTTPHeaders) {
            for (name, value) in headers {
                guard let field = FieldName(name) else { continue }
                switch field {
                case .connection:
                    needsFiltering = true
                    ASCII.forEachListElement(value) { connectionTokens.insert($0) }
                case .transferEncoding:
                    needsFiltering = true
                    var codings = transferCodings ?? []
                    ASCII.forEachListElement(value) { codings.append($0) }
                    transferCodings = codings
                case .contentLength:
                    contentLengths.append(value)
                case .upgrade:
                    needsFiltering = true
                    hasUpgrade = true
                case .te:
                    needsFiltering = true
                    ASCII.forEachListElement(value) { coding in
                        if coding == "trailers" || coding.hasPrefix("trailers;") { teTrailers = true }
                    }
                case .keepAlive, .proxyConnection, .proxyAuthorization, .proxyAuthenticate, .trailer:
                    needsFiltering = true
                case .host, .via:
                    break
                }
            }
        }

        func connectionNames(_ name: String) -> Bool {
            connectionTokens.names(field: name)
        }
    }

    /// Whether `via` (all Via values) contains our pseudonym as a received-by entry.
    package static func viaContains(_ headers: HTTPHeaders, pseudonym: String) -> Bool {
        for (name, value) in headers where FieldName(name) == .via {
            var found = false
            // entry: "1.1 name" or "HTTP/1.1 name (comment)"
            ASCII.forEachListElement(value) { entry in
                let parts = entry.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
                if parts.count >= 2, ASCII.equalsLowercase(pseudonym, String(parts[1])) { found = true }
            }
            if found { return true }
        }
        return false
    }

    package struct RewrittenRequest: Sendable {
        package var head: HTTPRequestHead
        package var framing: BodyFraming
        package var isUpgrade: Bool
    }

    /// Turns a client's absolute-form request into the origin-form request sent upstream.
    ///
    /// The framing fields the client sent never travel: the proxy decides the framing from what it
    /// parsed (`MessageFraming.requestFraming`) and writes its own `Content-Length` (canonical) or
    /// `Transfer-Encoding: chunked`. Fields go on in the client's order, then Host, the framing
    /// field, TE, Connection (upgrade), Max-Forwards (TRACE/OPTIONS) and Via.
    package static func rewriteRequest(
        _ head: HTTPRequestHead,
        target: RequestTarget,
        via: ViaHeader,
        requestID: (name: String, value: String)? = nil
    ) throws(ProxyError) -> RewrittenRequest {
        let survey = Survey(head.headers)
        let wantsUpgrade = survey.hasUpgrade && survey.connectionTokens.upgrade
        let (framing, contentLength) = try MessageFraming.requestFraming(
            transferCodings: survey.transferCodings,
            contentLengths: survey.contentLengths,
            version: head.version
        )
        let maxForwards = head.method == .TRACE || head.method == .OPTIONS ? Self.maxForwards(head.headers) : nil

        var headers: HTTPHeaders
        if survey.needsFiltering || !survey.contentLengths.isEmpty || maxForwards != nil {
            headers = endToEndFields(of: head.headers, survey: survey, keepUpgrade: wantsUpgrade, request: true, dropMaxForwards: maxForwards != nil)
            headers.add(name: "Host", value: target.authority)
        } else {
            // The common case: only Host changes (it must name the target's authority). One array
            // sized for what is added below, where replacing in place would copy the client's
            // (shared) array and then grow it.
            headers = HTTPHeaders()
            headers.reserveCapacity(head.headers.count + 3)
            for (name, value) in head.headers where FieldName(name) != .host {
                headers.add(name: name, value: value)
            }
            headers.add(name: "Host", value: target.authority)
        }
        if let contentLength { headers.add(name: "Content-Length", value: String(contentLength)) }
        if framing == .chunked { headers.add(name: "Transfer-Encoding", value: "chunked") }
        if survey.teTrailers { headers.add(name: "TE", value: "trailers") }
        if wantsUpgrade { headers.add(name: "Connection", value: "upgrade") }
        if let maxForwards, maxForwards > 0 { headers.add(name: "Max-Forwards", value: String(maxForwards - 1)) }
        headers.add(name: "Via", value: via.value(receivedWith: head.version))
        // `--request-id-header`: one field, the id the access log shows (the client's own when valid).
        if let requestID { headers.replaceOrAdd(name: requestID.name, value: requestID.value) }

        var upstream = HTTPRequestHead(version: .http1_1, method: head.method, uri: target.pathAndQuery)
        upstream.headers = headers
        return RewrittenRequest(head: upstream, framing: framing, isUpgrade: wantsUpgrade)
    }

    /// The request's Max-Forwards value (RFC 9110 §7.6.2), or nil when absent or not a number
    /// (then it is passed on untouched). Several fields: the first valid one counts.
    package static func maxForwards(_ headers: HTTPHeaders) -> Int? {
        for (name, value) in headers where name.utf8.count == 12 && ASCII.equalsLowercase(name, "max-forwards") {
            let trimmed = value.trimmingASCIISpaces()
            if let number = MessageFraming.parseContentLength(trimmed) { return number }
        }
        return nil
    }

    package struct RewrittenResponse: Sendable {
        package var head: HTTPResponseHead
        /// How the body is framed towards the client.
        package var clientFraming: BodyFraming
        /// How the body is framed as it comes from the origin.
        package var upstreamFraming: BodyFraming
        /// The client connection must close after this response (close-delimited to an HTTP/1.0 client,
        /// or the caller asked for it).
        package var closeClient: Bool
        /// The origin will not keep the upstream connection open after this response.
        package var upstreamWillClose: Bool
    }

    /// Rewrites an origin response for the client that sent `requestMethod` with `clientVersion`.
    /// Throws (502) when the response's framing cannot be relayed faithfully.
    package static func rewriteResponse(
        _ head: HTTPResponseHead,
        requestMethod: HTTPMethod,
        clientVersion: HTTPVersion,
        clientKeepAlive: Bool,
        isUpgradeResponse: Bool,
        via: ViaHeader
    ) throws(ProxyError) -> RewrittenResponse {
        let survey = Survey(head.headers)
        let code = head.status.code
        let hasNoBody = requestMethod == .HEAD || (100..<200).contains(code) || code == 204 || code == 304

        let upstreamFraming: BodyFraming
        if hasNoBody {
            upstreamFraming = .none
        } else {
            if let problem = MessageFraming.responseFramingProblem(
                transferCodings: survey.transferCodings,
                contentLengths: survey.contentLengths,
                version: head.version
            ) {
                throw .unrelayableResponse(problem)
            }
            if survey.transferCodings != nil {
                upstreamFraming = .chunked
            } else if let length = survey.contentLengths.first {
                upstreamFraming = length == "0" ? .none : .contentLength
            } else {
                upstreamFraming = .closeDelimited
            }
        }
        let upstreamKeepAlive = head.version.major == 1 && head.version.minor >= 1
            ? !survey.connectionTokens.close
            : survey.connectionTokens.keepAlive
        let upstreamWillClose = !upstreamKeepAlive || upstreamFraming == .closeDelimited

        let clientIs11 = clientVersion.major == 1 && clientVersion.minor >= 1
        var clientFraming: BodyFraming
        switch upstreamFraming {
        case .none: clientFraming = .none
        case .contentLength: clientFraming = .contentLength
        case .chunked, .closeDelimited: clientFraming = clientIs11 ? .chunked : .closeDelimited
        }
        if hasNoBody { clientFraming = .none }
        let closeClient = !clientKeepAlive || clientFraming == .closeDelimited

        var headers: HTTPHeaders
        if survey.needsFiltering {
            // Transfer-Encoding never goes through as it is (HEAD and 304 may advertise the coding
            // a GET would have used): the body is re-framed below. Content-Length stays (it was
            // checked above, and HEAD/304 responses may carry the length a GET would have had).
            headers = endToEndFields(of: head.headers, survey: survey, keepUpgrade: isUpgradeResponse, request: false, dropMaxForwards: false)
        } else {
            headers = head.headers
        }
        if clientFraming == .chunked {
            headers.add(name: "Transfer-Encoding", value: "chunked")
        }
        if isUpgradeResponse {
            headers.add(name: "Connection", value: "upgrade")
        } else if closeClient {
            headers.add(name: "Connection", value: "close")
        } else if !clientIs11 {
            headers.add(name: "Connection", value: "keep-alive")
        }
        headers.add(name: "Via", value: via.value(receivedWith: head.version))

        var out = HTTPResponseHead(version: clientIs11 ? .http1_1 : .http1_0, status: head.status)
        out.headers = headers
        return RewrittenResponse(
            head: out,
            clientFraming: clientFraming,
            upstreamFraming: upstreamFraming,
            closeClient: closeClient,
            upstreamWillClose: upstreamWillClose
        )
    }
}

extension MessageRewriter {
    /// The fields that travel on: everything except hop-by-hop fields and the fields `Connection`
    /// names (never Content-Length, Host or Transfer-Encoding: those would change framing or
    /// routing). `keepUpgrade`: an upgrade goes through, so its `Upgrade` field does too.
    /// `request`: Host and Content-Length are dropped too (the caller writes its own).
    /// `dropMaxForwards`: the caller writes a decremented Max-Forwards.
    fileprivate static func endToEndFields(
        of fields: HTTPHeaders,
        survey: Survey,
        keepUpgrade: Bool,
        request: Bool,
        dropMaxForwards: Bool
    ) -> HTTPHeaders {
        var kept = HTTPHeaders()
        kept.reserveCapacity(fields.count + 2)
        for (name, value) in fields {
            if let field = FieldName(name) {
                if field == .upgrade && keepUpgrade {
                    kept.add(name: name, value: value)
                    continue
                }
                if field.isHopByHop || (request && (field == .host || field == .contentLength)) { continue }
                if field.isProtectedFromConnection {
                    kept.add(name: name, value: value)
                    continue
                }
            } else if dropMaxForwards && name.utf8.count == 12 && ASCII.equalsLowercase(name, "max-forwards") {
                continue
            }
            if survey.connectionNames(name) { continue }
            kept.add(name: name, value: value)
        }
        return kept
    }
}

extension String {
    /// Without leading and trailing spaces and tabs (OWS).
    func trimmingASCIISpaces() -> String {
        let bytes = utf8
        guard let first = bytes.firstIndex(where: { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") }),
              let last = bytes.lastIndex(where: { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") })
        else { return "" }
        return String(self[first...last])
    }
}
