import NIOCore
import NIOHTTP1
import ProxyAccess
import ProxyHTTP
import ProxyKit
import ProxyUpstream

// The proxy's own message types: what `ClientConnectionStateMachine` and its sub-machines see of
// requests and responses. They wrap the codec's heads without converting them (requests in
// ForwardMessage+Request.swift, responses in ForwardMessage+Response.swift), so a message costs
// nothing more than its parse; the machine files never name a codec type.

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

// MARK: - conversions at the handler

extension RequestPart {
    /// The part as the upstream connection writes it.
    var upstreamPart: HTTPClientRequestPart {
        switch self {
        case .head(let head): .head(head.converted)
        case .body(let buffer): .body(.byteBuffer(buffer))
        case .end(let trailers): .end(trailers?.storage)
        }
    }
}
