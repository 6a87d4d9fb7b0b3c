import NIOHTTP1

/// How a message body is delimited on the wire.
public enum BodyFraming: Sendable, Equatable {
    case none
    case contentLength
    case chunked
    /// Ends when the connection closes (responses only).
    case closeDelimited
}

/// Pure header rewriting for both directions (RFC 9110 §7.6: hop-by-hop fields, Via; RFC 9112 §6: framing).
public enum MessageRewriter {
    /// Fields that only describe the connection they arrived on and never travel further.
    static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate",
        "te", "trailer", "transfer-encoding", "upgrade",
    ]

    /// Fields a `Connection` header may not make us drop: dropping them would change framing or routing.
    private static let protectedFromConnection: Set<String> = ["content-length", "host", "transfer-encoding"]

    /// Lowercased tokens listed in all `Connection` headers.
    static func connectionTokens(_ headers: HTTPHeaders) -> Set<String> {
        var tokens = Set<String>()
        for value in headers[canonicalForm: "connection"] {
            tokens.insert(value.lowercased().trimmingSpaces())
        }
        return tokens
    }

    /// Whether `via` (all Via values) contains our pseudonym as a received-by entry.
    public static func viaContains(_ headers: HTTPHeaders, pseudonym: String) -> Bool {
        let needle = pseudonym.lowercased()
        for entry in headers[canonicalForm: "via"] {
            // entry: "1.1 name" or "HTTP/1.1 name (comment)"
            let parts = entry.lowercased().split(separator: " ", omittingEmptySubsequences: true)
            if parts.count >= 2, parts[1] == needle { return true }
        }
        return false
    }

    public struct RewrittenRequest: Sendable {
        public var head: HTTPRequestHead
        public var framing: BodyFraming
        public var isUpgrade: Bool
    }

    /// Turns a client's absolute-form request into the origin-form request sent upstream.
    public static func rewriteRequest(
        _ head: HTTPRequestHead,
        target: RequestTarget,
        viaPseudonym: String
    ) throws(ProxyError) -> RewrittenRequest {
        let tokens = connectionTokens(head.headers)
        let wantsUpgrade = tokens.contains("upgrade") && head.headers.contains(name: "upgrade")

        let framing: BodyFraming
        let transferEncodings = head.headers[canonicalForm: "transfer-encoding"].map { $0.lowercased() }
        if !transferEncodings.isEmpty {
            guard transferEncodings.last == "chunked" else {
                throw .malformed("request Transfer-Encoding must end in chunked (RFC 9112 §6.3)")
            }
            guard !head.headers.contains(name: "content-length") else {
                throw .malformed("request has both Content-Length and Transfer-Encoding")
            }
            framing = .chunked
        } else if let length = head.headers.first(name: "content-length") {
            guard let value = Int(length), value >= 0 else {
                throw .malformed("invalid Content-Length '\(length.prefix(40))'")
            }
            framing = value == 0 ? .none : .contentLength
        } else {
            framing = .none
        }

        var headers = HTTPHeaders()
        headers.reserveCapacity(head.headers.count + 2)
        var teTrailers = false
        for (name, value) in head.headers {
            let lower = name.lowercased()
            if lower == "te" {
                if value.lowercased().contains("trailers") { teTrailers = true }
                continue
            }
            if lower == "host" { continue }
            if lower == "upgrade" && wantsUpgrade {
                headers.add(name: name, value: value)
                continue
            }
            if hopByHop.contains(lower) { continue }
            if tokens.contains(lower) && !protectedFromConnection.contains(lower) { continue }
            headers.add(name: name, value: value)
        }
        headers.replaceOrAdd(name: "Host", value: target.authority)
        if framing == .chunked {
            headers.add(name: "Transfer-Encoding", value: transferEncodings.joined(separator: ", "))
        }
        if teTrailers { headers.add(name: "TE", value: "trailers") }
        if wantsUpgrade { headers.add(name: "Connection", value: "upgrade") }
        headers.add(name: "Via", value: "\(head.version.major).\(head.version.minor) \(viaPseudonym)")

        var upstream = HTTPRequestHead(version: .http1_1, method: head.method, uri: target.pathAndQuery)
        upstream.headers = headers
        return RewrittenRequest(head: upstream, framing: framing, isUpgrade: wantsUpgrade)
    }

    public struct RewrittenResponse: Sendable {
        public var head: HTTPResponseHead
        /// How the body is framed towards the client.
        public var clientFraming: BodyFraming
        /// How the body is framed as it comes from the origin.
        public var upstreamFraming: BodyFraming
        /// The client connection must close after this response (close-delimited to an HTTP/1.0 client,
        /// or the caller asked for it).
        public var closeClient: Bool
        /// The origin will not keep the upstream connection open after this response.
        public var upstreamWillClose: Bool
    }

    /// Rewrites an origin response for the client that sent `requestMethod` with `clientVersion`.
    public static func rewriteResponse(
        _ head: HTTPResponseHead,
        requestMethod: HTTPMethod,
        clientVersion: HTTPVersion,
        clientKeepAlive: Bool,
        isUpgradeResponse: Bool,
        viaPseudonym: String
    ) -> RewrittenResponse {
        let tokens = connectionTokens(head.headers)
        let code = head.status.code
        let hasNoBody = requestMethod == .HEAD || (100..<200).contains(code) || code == 204 || code == 304
        let chunked = head.headers[canonicalForm: "transfer-encoding"].last?.lowercased() == "chunked"
        let hasLength = head.headers.contains(name: "content-length")

        let upstreamFraming: BodyFraming
        if hasNoBody {
            upstreamFraming = .none
        } else if chunked {
            upstreamFraming = .chunked
        } else if hasLength {
            upstreamFraming = head.headers.first(name: "content-length") == "0" ? .none : .contentLength
        } else {
            upstreamFraming = .closeDelimited
        }
        let upstreamKeepAlive = head.version.major == 1 && head.version.minor >= 1
            ? !tokens.contains("close")
            : tokens.contains("keep-alive")
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

        var headers = HTTPHeaders()
        headers.reserveCapacity(head.headers.count + 2)
        for (name, value) in head.headers {
            let lower = name.lowercased()
            if lower == "upgrade" && isUpgradeResponse {
                headers.add(name: name, value: value)
                continue
            }
            if lower == "transfer-encoding" {
                // HEAD and 304 may advertise the coding a GET would have used; keep it there only
                // when the client can parse it. Everywhere else we re-frame ourselves below.
                continue
            }
            if hopByHop.contains(lower) { continue }
            if tokens.contains(lower) && !protectedFromConnection.contains(lower) { continue }
            headers.add(name: name, value: value)
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
        headers.add(name: "Via", value: "\(head.version.major).\(head.version.minor) \(viaPseudonym)")

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

extension String {
    func trimmingSpaces() -> String {
        var s = Substring(self)
        while s.first == " " || s.first == "\t" { s = s.dropFirst() }
        while s.last == " " || s.last == "\t" { s = s.dropLast() }
        return String(s)
    }
}
