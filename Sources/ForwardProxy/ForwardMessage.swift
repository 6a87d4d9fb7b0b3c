import NIOCore
import NIOHTTP1
import ProxyAccess
import ProxyHTTP
import ProxyKit
import ProxyUpstream

// The proxy's own message types: what `ClientConnectionStateMachine` and its sub-machines see of
// requests and responses. They wrap the codec's values without converting them (requests still
// NIOHTTP1's; responses from origins the HTTP1Codec head, ForwardMessage+Response.swift), so a
// message costs nothing more than its parse; the machine files never name a codec type.

/// The header fields of a head or a trailer section.
struct HeaderFields {
    var storage: HTTPHeaders

    init(_ storage: HTTPHeaders) {
        self.storage = storage
    }

    init(_ fields: [(String, String)] = []) {
        self.storage = HTTPHeaders(fields)
    }

    var isEmpty: Bool { storage.isEmpty }

    /// The first value of `name` (case-insensitive).
    func first(name: String) -> String? { storage.first(name: name) }

    func contains(name: String) -> Bool { storage.contains(name: name) }

    /// The values of `name`, comma-separated lists split (RFC 9110 §5.3).
    func listValues(_ name: String) -> [Substring] { storage[canonicalForm: name] }

    mutating func add(name: String, value: String) { storage.add(name: name, value: value) }

    mutating func replaceOrAdd(name: String, value: String) { storage.replaceOrAdd(name: name, value: value) }

    /// The trailer fields that may travel on (`MessageFraming.forwardableTrailers`).
    static func forwardable(_ trailers: HeaderFields?) -> HeaderFields? {
        guard let trailers else { return nil }
        return MessageFraming.forwardableTrailers(trailers.storage).map(HeaderFields.init)
    }
}

/// A request head as the client sent it, or as it goes upstream.
struct RequestHead {
    var storage: HTTPRequestHead
    /// A CONNECT head after which more bytes were already read: the client did not wait for the
    /// answer, so what follows is tunnel bytes and a refusal cannot keep the connection.
    var bytesFollowed = false

    init(_ storage: HTTPRequestHead) {
        self.storage = storage
    }

    var uri: String { storage.uri }
    /// The method as written in logs (`GET`, `CONNECT`, an extension method's own name).
    var methodName: String { storage.method.rawValue }
    var isConnect: Bool { storage.method == .CONNECT }
    /// TRACE and OPTIONS: `Max-Forwards` is theirs (RFC 9110 §7.6.2).
    var honoursMaxForwards: Bool { storage.method == .TRACE || storage.method == .OPTIONS }
    /// Idempotent (RFC 9110 §9.2.2): sending it twice does no harm.
    var isIdempotent: Bool {
        switch storage.method {
        case .GET, .HEAD, .OPTIONS, .TRACE, .PUT, .DELETE: true
        default: false
        }
    }
    /// The minor HTTP version (1.0 or 1.1).
    var minorVersion: Int { storage.version.minor }
    var isKeepAlive: Bool { storage.isKeepAlive }
    var fields: HeaderFields { HeaderFields(storage.headers) }
}

/// A part of a request, as the client's decoder hands it on or as it goes upstream.
enum RequestPart {
    case head(RequestHead)
    case body(ByteBuffer)
    case end(HeaderFields?)
}

/// A part of a response, as it comes from the origin or goes to the client.
enum ResponsePart {
    case head(ResponseHead)
    case body(ByteBuffer)
    case end(HeaderFields?)
}

extension ProxyError {
    /// The status code the client is answered with.
    var statusCode: Int { Int(status.code) }
}

// MARK: - the proxy's rules, on its own types

/// A request as it goes to the origin (`MessageRewriter.rewriteRequest`).
struct OriginRequest {
    var head: RequestHead
    var framing: ProxyHTTP.BodyFraming
    var isUpgrade: Bool
}

/// A response as it goes to the client (`ResponseHead.forClient`).
struct ClientResponse {
    var head: ResponseHead
    var flow: ResponseFlow
}

/// What the rest of a response does once its head went to the client (kept while the body
/// streams; the head itself, a slice of the upstream read buffer, is not).
struct ResponseFlow {
    /// How the body is framed towards the client.
    var clientFraming: ProxyHTTP.BodyFraming
    /// The client connection must close after this response.
    var closeClient: Bool
    /// The origin will not keep the upstream connection open after this response.
    var upstreamWillClose: Bool
}

extension RequestHead {
    /// The head as the parent proxy gets it: `http://AUTHORITY/path?query` on the request line
    /// (the address HTTPDNS chose), the same Host, and the parent's credentials.
    func forParent(_ forward: ParentForward, pathAndQuery: String) -> RequestHead {
        var head = self
        head.storage.uri = "http://" + forward.authority + pathAndQuery
        if let authorization = forward.authorization {
            head.storage.headers.replaceOrAdd(name: "Proxy-Authorization", value: authorization)
        }
        return head
    }

    /// The Basic credentials in `Proxy-Authorization` (`ProxyCredentials.parse`).
    var proxyCredentials: ProxyCredentials.Parsed { ProxyCredentials.parse(storage.headers) }

    /// Whether the head announces a body (`MessageFraming.mayHaveBody`).
    var mayHaveBody: Bool { MessageFraming.mayHaveBody(storage.headers) }

    /// Whether `Via` names this proxy already (a loop).
    func passedThrough(pseudonym: String) -> Bool { MessageRewriter.viaContains(storage.headers, pseudonym: pseudonym) }

    /// The request's `Max-Forwards` value (`MessageRewriter.maxForwards`).
    var maxForwards: Int? { MessageRewriter.maxForwards(storage.headers) }

    /// The client's own request id in `field`, when it is one to pass on (`RequestID.clientValue`).
    func clientRequestID(field: String) -> String? { RequestID.clientValue(storage.headers, field: field) }

    /// The request as it goes to the origin (`MessageRewriter.rewriteRequest`).
    func forOrigin(target: RequestTarget, via: ViaHeader, requestID: (name: String, value: String)?) throws(ProxyError) -> OriginRequest {
        let rewritten = try MessageRewriter.rewriteRequest(storage, target: target, via: via, requestID: requestID)
        return OriginRequest(head: RequestHead(rewritten.head), framing: rewritten.framing, isUpgrade: rewritten.isUpgrade)
    }

    /// The proxy's own answer to TRACE or OPTIONS with `Max-Forwards: 0` (`LocalAnswer`), before
    /// the fields every answer of its own carries.
    func maxForwardsZeroAnswer(via: ViaHeader) -> (head: ResponseHead, body: String) {
        let answer = LocalAnswer.forMaxForwardsZero(storage, via: via)
        return (ResponseHead(answer.head), answer.body)
    }
}

// MARK: - conversions at the handler

extension RequestPart {
    /// The part as the upstream connection writes it.
    var upstreamPart: HTTPClientRequestPart {
        switch self {
        case .head(let head): .head(head.storage)
        case .body(let buffer): .body(.byteBuffer(buffer))
        case .end(let trailers): .end(trailers?.storage)
        }
    }
}
