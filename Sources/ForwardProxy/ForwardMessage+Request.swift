import HTTP1Codec
import NIOCore
import NIOHTTP1
import ProxyAccess
import ProxyHTTP
import ProxyKit
import ProxyUpstream

// Request heads: a client's as the codec parsed it, sent upstream from its own kept lines; heads
// of the tests' making as NIOHTTP1 heads, rewritten by `MessageRewriter.rewriteRequest`, which
// makes the same decisions.

/// A request head as the client sent it, or as it goes upstream.
struct RequestHead {
    enum Storage {
        /// A head of NIOHTTP1's type (the tests' own).
        case own(HTTPRequestHead)
        /// A client's head as the codec parsed it: a slice of the read buffer and offsets into it.
        case parsed(HTTP1Head)
        /// A parsed head as it goes upstream (`OutgoingRequestHead`).
        case outgoing(OutgoingRequestHead)
    }

    private(set) var storage: Storage
    /// What every request asks of its head several times, read from it once: each look at the
    /// codec's head through `codecHead` copies it (140 bytes and a retain of its buffer).
    private let methodKind: MethodKind
    /// The minor HTTP version (1.0 or 1.1).
    let minorVersion: Int
    let isKeepAlive: Bool
    /// The method as written in logs (`GET`, `CONNECT`, an extension method's own name).
    let methodName: String
    /// A CONNECT head after which more bytes were already read: the client did not wait for the
    /// answer, so what follows is tunnel bytes and a refusal cannot keep the connection.
    var bytesFollowed = false
    /// The request target as text, made once (the intake reads it several times); the
    /// transparent listener replaces an origin-form target with the absolute form.
    private(set) var uri: String

    init(_ storage: HTTPRequestHead) {
        self.storage = .own(storage)
        self.uri = storage.uri
        methodKind = UpstreamResponseReader.methodKind(storage.method)
        minorVersion = storage.version.minor
        isKeepAlive = storage.isKeepAlive
        methodName = storage.method.rawValue
    }

    init(parsed head: HTTP1Head) {
        self.storage = .parsed(head)
        self.uri = head.targetString
        (methodKind, minorVersion, isKeepAlive) = (head.methodKind, head.minorVersion, head.keepAlive)
        methodName = head.methodString
    }

    init(outgoing head: OutgoingRequestHead) {
        self.storage = .outgoing(head)
        self.uri = head.target
        let parsed = head.parsed
        (methodKind, minorVersion, isKeepAlive) = (parsed.methodKind, parsed.minorVersion, parsed.keepAlive)
        methodName = parsed.methodString
    }

    /// The codec's head (parsed, or the one an outgoing head is written from).
    private var codecHead: HTTP1Head? {
        switch storage {
        case .own: nil
        case .parsed(let head): head
        case .outgoing(let outgoing): outgoing.parsed
        }
    }

    /// The transparent listener's absolute form of an origin-form target.
    mutating func setTarget(_ uri: String) {
        self.uri = uri
        if case .own(var head) = storage {
            head.uri = uri
            storage = .own(head)
        }
    }

    /// The method as NIOHTTP1's value.
    var method: HTTPMethod {
        if let head = codecHead { return Self.method(head) }
        guard case .own(let head) = storage else { return .GET }
        return head.method
    }

    var isConnect: Bool { methodKind == .connect }
    var isHEAD: Bool { methodKind == .head }
    /// TRACE and OPTIONS: `Max-Forwards` is theirs (RFC 9110 §7.6.2).
    var honoursMaxForwards: Bool { methodKind == .trace || methodKind == .options }
    /// Idempotent (RFC 9110 §9.2.2): sending it twice does no harm.
    var isIdempotent: Bool {
        switch methodKind {
        case .get, .head, .options, .trace: true
        case .post, .connect: false
        case .other: methodName == "PUT" || methodName == "DELETE"
        }
    }

    /// The first value of the field `name` (case-insensitive), without converting the head.
    func firstField(_ name: String) -> String? {
        if let head = codecHead { return head.firstValue(named: name) }
        guard case .own(let head) = storage else { return nil }
        return head.headers.first(name: name)
    }

    /// Only the fields of a known name, as NIOHTTP1's fields (empty, without allocating, when
    /// there are none).
    private func only(_ field: KnownField, _ name: String) -> HTTPHeaders {
        guard let head = codecHead else {
            guard case .own(let own) = storage else { return HTTPHeaders() }
            return HTTPHeaders(own.headers.filter { $0.name.lowercased() == name.lowercased() })
        }
        guard head.has(field) else { return HTTPHeaders() }
        return HTTPHeaders(head.values(field).map { (name, $0) })
    }

    /// The `Proxy-Authorization` fields.
    var proxyAuthorization: HeaderFields { HeaderFields(only(.proxyAuthorization, "Proxy-Authorization")) }

    /// The values of the `Host` fields.
    var hostFields: [String] {
        if let head = codecHead { return head.values(.host) }
        guard case .own(let head) = storage else { return [] }
        return head.headers["host"]
    }

    /// The `Via` fields.
    var via: HeaderFields { HeaderFields(only(.via, "Via")) }

    /// Whether the head has an `Upgrade` field (asked to switch or not).
    var hasUpgradeField: Bool {
        if let head = codecHead { return head.has(.upgrade) }
        guard case .own(let head) = storage else { return false }
        return head.headers.contains(name: "upgrade")
    }

    /// The head as NIOHTTP1's value. An outgoing head is written and read back, so the value is
    /// what the origin gets (the tests' view of it).
    var converted: HTTPRequestHead {
        switch storage {
        case .own(let head):
            return head
        case .parsed(let head):
            return HTTPRequestHead(version: HTTPVersion(major: 1, minor: head.minorVersion), method: Self.method(head), uri: uri, headers: HTTPHeaders(head.fieldList))
        case .outgoing(let outgoing):
            var writer = HeadWriter()
            var bytes = outgoing.written(by: &writer, allocator: ByteBufferAllocator())
            var decoder = MessageDecoder(role: .request)
            guard case .head(let head) = try? decoder.next(&bytes) else {
                assertionFailure("an outgoing head the codec cannot read back")
                return HTTPRequestHead(version: .http1_1, method: Self.method(outgoing.parsed), uri: outgoing.target)
            }
            return HTTPRequestHead(version: .http1_1, method: Self.method(head), uri: head.targetString, headers: HTTPHeaders(head.fieldList))
        }
    }

    private static func method(_ head: HTTP1Head) -> HTTPMethod {
        switch head.methodKind {
        case .get: .GET
        case .head: .HEAD
        case .post: .POST
        case .connect: .CONNECT
        case .options: .OPTIONS
        case .trace: .TRACE
        case .other: HTTPMethod(rawValue: head.methodString)
        }
    }
}

/// A client's parsed head as it goes to the origin (`HeadWriter.requestHead`): its kept lines
/// copied as they arrived, then the proxy's Host, framing field, extra fields, Via and the fields
/// it sets in place of the client's.
struct OutgoingRequestHead {
    var parsed: HTTP1Head
    /// Origin-form (`/path?query`), or absolute-form for a parent proxy.
    var target: String
    var host: String
    var framing: HTTP1Codec.BodyFraming
    /// TE, Connection: upgrade, Max-Forwards: what the proxy writes after the framing field.
    var extraFields: [(name: String, value: String)]
    /// A field of the client's not copied (Max-Forwards, which the proxy rewrites).
    var dropping: KnownField?
    var via: String
    /// Fields the proxy sets (the request id, a parent's credentials); the client's of those
    /// names are not copied.
    var replacing: [(name: String, value: String)]

    var isChunked: Bool { framing == .chunked }

    func written(by writer: inout HeadWriter, allocator: ByteBufferAllocator) -> ByteBuffer {
        writer.requestHead(
            parsed, target: target, host: host, framing: framing, via: via, extraFields: extraFields, dropping: dropping,
            replacing: replacing, allocator: allocator
        )
    }
}

extension RequestHead {
    /// The head as the parent proxy gets it: `http://AUTHORITY/path?query` on the request line
    /// (the address HTTPDNS chose), the same Host, and the parent's credentials.
    func forParent(_ forward: ParentForward, pathAndQuery: String) -> RequestHead {
        let target = "http://" + forward.authority + pathAndQuery
        switch storage {
        case .outgoing(var outgoing):
            outgoing.target = target
            if let authorization = forward.authorization { outgoing.replacing.append(("Proxy-Authorization", authorization)) }
            var head = RequestHead(outgoing: outgoing)
            head.bytesFollowed = bytesFollowed
            return head
        case .own, .parsed:
            var own = converted
            own.uri = target
            if let authorization = forward.authorization {
                own.headers.replaceOrAdd(name: "Proxy-Authorization", value: authorization)
            }
            return RequestHead(own)
        }
    }

    /// The Basic credentials in `Proxy-Authorization` (`ProxyCredentials.parse`).
    var proxyCredentials: ProxyCredentials.Parsed { ProxyCredentials.parse(proxyAuthorization.storage) }

    /// Whether the head announces a body (`MessageFraming.mayHaveBody`).
    var mayHaveBody: Bool {
        if let head = codecHead {
            switch head.framing {
            case .chunked, .contentLength: return true
            case .none, .untilClose, .tunnel: return false
            }
        }
        return MessageFraming.mayHaveBody(converted.headers)
    }

    /// Whether `Via` names this proxy already (a loop).
    func passedThrough(pseudonym: String) -> Bool { MessageRewriter.viaContains(via.storage, pseudonym: pseudonym) }

    /// The request's `Max-Forwards` value (`MessageRewriter.maxForwards`).
    var maxForwards: Int? { MessageRewriter.maxForwards(only(.maxForwards, "Max-Forwards")) }

    /// The client's own request id in `field`, when it is one to pass on (`RequestID.clientValue`).
    func clientRequestID(field: String) -> String? {
        guard let head = codecHead else { return RequestID.clientValue(converted.headers, field: field) }
        let values = head.values(named: field)
        guard !values.isEmpty else { return nil }
        return RequestID.clientValue(HTTPHeaders(values.map { (field, $0) }), field: field)
    }

    /// The request as it goes to the origin: `MessageRewriter.rewriteRequest`'s decisions, on the
    /// codec's head (which already refused every framing the rewriter refuses).
    func forOrigin(target: RequestTarget, via: ViaHeader, requestID: (name: String, value: String)?) throws(ProxyError) -> OriginRequest {
        guard case .parsed(let head) = storage else {
            let rewritten = try MessageRewriter.rewriteRequest(converted, target: target, via: via, requestID: requestID)
            return OriginRequest(head: RequestHead(rewritten.head), framing: rewritten.framing, isUpgrade: rewritten.isUpgrade)
        }
        let maxForwards = honoursMaxForwards ? self.maxForwards : nil
        var extraFields: [(name: String, value: String)] = []
        if head.acceptsTrailers { extraFields.append(("TE", "trailers")) }
        if head.isUpgrade { extraFields.append(("Connection", "upgrade")) }
        if let maxForwards, maxForwards > 0 { extraFields.append(("Max-Forwards", String(maxForwards - 1))) }
        let framing: HTTP1Codec.BodyFraming
        let origin: ProxyHTTP.BodyFraming
        switch head.framing {
        case .contentLength(let length):
            (framing, origin) = (.contentLength(length), .contentLength)
        case .chunked:
            (framing, origin) = (.chunked, .chunked)
        case .none, .untilClose, .tunnel:
            // `Content-Length: 0` travels as the client sent it (a POST without content).
            (framing, origin) = (head.has(.contentLength) ? .contentLength(0) : .none, .none)
        }
        let outgoing = OutgoingRequestHead(
            parsed: head,
            target: target.pathAndQuery,
            host: target.authority,
            framing: framing,
            extraFields: extraFields,
            dropping: maxForwards != nil ? .maxForwards : nil,
            via: via.value(receivedWith: head.minorVersion == 0 ? .http1_0 : .http1_1),
            replacing: requestID.map { [$0] } ?? []
        )
        return OriginRequest(head: RequestHead(outgoing: outgoing), framing: origin, isUpgrade: head.isUpgrade)
    }

    /// The proxy's own answer to TRACE or OPTIONS with `Max-Forwards: 0` (`LocalAnswer`), before
    /// the fields every answer of its own carries.
    func maxForwardsZeroAnswer(via: ViaHeader) -> (head: ResponseHead, body: String) {
        let answer = LocalAnswer.forMaxForwardsZero(converted, via: via)
        return (ResponseHead(answer.head), answer.body)
    }
}
