/// Why the codec refused a peer's bytes. After any of these nothing further on the connection can
/// be framed reliably: the caller answers (a request error) or gives up the exchange (a response
/// error) and closes.
///
/// The codec knows neither ProxyKit nor NIOHTTP1, so it has its own error; `kind` names the
/// ProxyError kind the forward path answers with and `reason` is the text it always had. The
/// mapping is one switch (ForwardProxy's `ProxyError.init(_: HTTP1CodecError)` for requests):
///
/// | kind                | status | what the forward path makes of it                                     |
/// | ------------------- | ------ | --------------------------------------------------------------------- |
/// | `.malformedRequest` | 400    | `ProxyError.malformed(reason)` ("malformed request: " + reason)         |
/// | `.headersTooLarge`  | 431    | `ProxyError(.headersTooLarge, reason)`                                 |
/// | `.uriTooLong`       | 414    | `ProxyError(.uriTooLong, reason)`                                      |
/// | `.notImplemented`   | 501    | `ProxyError(.notImplemented, reason)`                                  |
/// | `.invalidResponse`  | 502    | `UpstreamCloseReason(error)` (the upstream response reader's refusal), |
/// |                     |        | which the machine turns into `ProxyError(.invalidResponse, "<host>     |
/// |                     |        | sent an invalid response: " + reason)`; `isUnrelayable` reasons read   |
/// |                     |        | "the origin sent a response that cannot be relayed: " + reason, and    |
/// |                     |        | `unaskedSwitch` "<host> switched protocols (101) without being asked to" |
///
/// The reasons are the texts the llhttp stack the codec replaced gave (its `RequestParseFailure`,
/// `MessageFraming` and `UpstreamFramingError`, kept in the differential tests' oracle) and of the
/// machine's 414 and 101 checks, so logs and error bodies read the same after the switch.
package struct HTTP1CodecError: Error, Hashable, Sendable, CustomStringConvertible {
    package enum Kind: String, Sendable, Hashable {
        case malformedRequest = "malformed_request"
        case headersTooLarge = "headers_too_large"
        case uriTooLong = "uri_too_long"
        case notImplemented = "not_implemented"
        case invalidResponse = "invalid_response"
    }

    package var kind: Kind
    package var reason: String
    /// A response that parsed but whose framing cannot be relayed (today's second 502 text).
    package var isUnrelayable = false

    package init(_ kind: Kind, _ reason: String, isUnrelayable: Bool = false) {
        self.kind = kind
        self.reason = reason
        self.isUnrelayable = isUnrelayable
    }

    /// The status the client is answered with.
    package var status: Int {
        switch kind {
        case .malformedRequest: 400
        case .headersTooLarge: 431
        case .uriTooLong: 414
        case .notImplemented: 501
        case .invalidResponse: 502
        }
    }

    package var description: String { "\(kind.rawValue): \(reason)" }
}

/// What is wrong with bytes that do not parse, whichever side sent them. A request flaw becomes a
/// 400 with today's RequestParseFailure text; a response flaw a 502 with today's
/// "unparseable response (...)" text, which quoted NIO's description of the llhttp error.
enum Flaw: Sendable {
    case method, target, version, status
    /// CR not followed by LF, LF without CR, a missing CRLF after a start line or chunk.
    case lineEnding
    /// A field name that is no token, a byte a field value may not hold, obs-fold, space before the colon.
    case fieldLine
    case contentLength
    /// A second Content-Length field, or Content-Length with Transfer-Encoding.
    case unexpectedContentLength
    case chunkSize
    /// A chunk extension that is not `;name[=token|quoted-string]`.
    case chunkExtension
    /// Transfer-Encoding where it cannot be (a trailer section).
    case transferEncoding

    /// How NIO described the llhttp error for the same flaw (today's response reasons quote it).
    private var llhttpDescription: String {
        switch self {
        case .method: "invalid HTTP method"
        case .target: "invalid URL"
        case .version: "invalid HTTP version"
        case .status: "invalid HTTP status code"
        case .lineEnding: "LF character expected"
        case .fieldLine: "invalid character in header"
        case .contentLength: "invalid character in content-length header"
        case .unexpectedContentLength: "unexpected content-length header"
        case .chunkSize, .chunkExtension: "invalid character in chunk size header"
        case .transferEncoding: "unknown (http_parser error)"
        }
    }

    private var requestReason: String {
        switch self {
        case .method: "invalid method"
        case .target: "invalid request target"
        case .version: "invalid HTTP version"
        case .status: "the request could not be parsed (invalid HTTP status code)"
        case .lineEnding: "invalid line ending or framing (lines must end in CRLF)"
        case .fieldLine: "invalid header field (name, value or line folding)"
        case .contentLength: "invalid Content-Length"
        case .unexpectedContentLength: "Content-Length is not allowed here (duplicate, or together with Transfer-Encoding)"
        case .chunkSize, .chunkExtension: "invalid chunk size in the chunked body"
        case .transferEncoding: "invalid framing: Transfer-Encoding must end in chunked (RFC 9112 §6.3), and lines must end in CRLF"
        }
    }

    func error(_ role: Role) -> HTTP1CodecError {
        switch role {
        case .request: HTTP1CodecError(.malformedRequest, requestReason)
        case .response: HTTP1CodecError(.invalidResponse, "unparseable response (\(llhttpDescription))")
        }
    }
}

/// Which side's messages a parser reads: requests from a client, responses from an origin.
package enum Role: Sendable, Hashable {
    case request
    case response
}

extension HTTP1CodecError {
    /// A head or trailer section over the limits (431 for a request, 502 for a response).
    static func headTooLarge(_ role: Role, _ limits: HTTP1Limits) -> HTTP1CodecError {
        switch role {
        case .request:
            HTTP1CodecError(
                .headersTooLarge,
                "request headers are too large (at most \(limits.maxRequestFields) fields and \(limits.maxHeadBytes) bytes)"
            )
        case .response:
            HTTP1CodecError(
                .invalidResponse,
                "response head too large (at most \(limits.maxResponseFields) fields and \(limits.maxHeadBytes) bytes)"
            )
        }
    }

    /// The request line alone overflowed the head (today's RequestParseFailure text).
    static func requestLineTooLong(_ length: Int, _ limits: HTTP1Limits) -> HTTP1CodecError {
        HTTP1CodecError(
            .uriTooLong,
            "the request line is \(length) bytes or more; the limit for the target is \(limits.maxTargetLength)"
        )
    }

    /// A complete request line whose target is over the limit (today's machine text).
    static func targetTooLong(_ length: Int, _ limits: HTTP1Limits) -> HTTP1CodecError {
        HTTP1CodecError(.uriTooLong, "the request target is \(length) bytes long; the limit is \(limits.maxTargetLength)")
    }

    package static let bytesWithoutRequest = HTTP1CodecError(.invalidResponse, "the origin sent bytes while no request was outstanding")
    package static let bytesAfterResponse = HTTP1CodecError(.invalidResponse, "the origin sent bytes after the end of its response")
    /// The reason without the host the machine puts in front of it.
    package static let unaskedSwitch = HTTP1CodecError(.invalidResponse, "switched protocols (101) without being asked to")
}

/// The bounds on what a peer can make the codec hold. The defaults are today's (MessageFraming).
package struct HTTP1Limits: Sendable, Hashable {
    /// Longest request target (414 beyond it; RFC 9112 §3 recommends at least 8000). ProxyKit's
    /// `maxRequestTargetLength`, which the access log shares.
    package var maxTargetLength = 8192
    /// Most field lines in a request head or trailer section (431 beyond it).
    package var maxRequestFields = 256
    /// Most field lines in a response head or trailer section: responses carry more Set-Cookie lines.
    package var maxResponseFields = 512
    /// Largest head or trailer section in bytes, start line and CRLFs included.
    package var maxHeadBytes = 80 * 1024
    /// Longest chunk-size line (size, extensions, CRLF): extensions are dropped, so they need no room.
    package var maxChunkLineBytes = 4096

    package init() {}

    func maxFields(_ role: Role) -> Int { role == .request ? maxRequestFields : maxResponseFields }
}
