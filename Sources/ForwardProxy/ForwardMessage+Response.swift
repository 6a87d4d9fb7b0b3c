import HTTP1Codec
import NIOCore
import NIOHTTP1
import ProxyHTTP
import ProxyKit

// Response heads: an origin's as the codec parsed it, relayed to the client from its own bytes;
// the proxy's own answers, interim heads and 101s as NIOHTTP1 heads.

/// A response head from an origin, or one the proxy writes.
struct ResponseHead {
    enum Storage {
        /// The proxy's own answers, interim heads and 101s: NIOHTTP1's head, written field by field.
        case own(HTTPResponseHead)
        /// A head as the origin sent it: the codec's parse, a slice of the upstream read buffer.
        case origin(HTTP1Head)
        /// An origin's final head as it goes to the client: its kept lines copied as they arrived,
        /// then the proxy's own fields.
        case relayed(RelayedHead)
    }

    var storage: Storage

    init(storage: Storage) {
        self.storage = storage
    }

    init(_ storage: HTTPResponseHead) {
        self.storage = .own(storage)
    }

    init(origin head: HTTP1Head) {
        self.storage = .origin(head)
    }

    /// An HTTP/1.1 head answering `error` with its status.
    init(answering error: ProxyError) {
        self.storage = .own(HTTPResponseHead(version: .http1_1, status: error.status))
    }

    var statusCode: Int {
        switch storage {
        case .own(let head): Int(head.status.code)
        case .origin(let head): head.status
        case .relayed(let relayed): relayed.origin.status
        }
    }

    /// The head as NIOHTTP1's value: the proxy's own as it is, an origin's converted (its fields
    /// as text, the standard reason phrase). For the rare paths: interim heads and 101s. A relayed
    /// head is written and read back, so the value is what the client gets (the tests' view of it).
    var converted: HTTPResponseHead {
        switch storage {
        case .own(let head): return head
        case .origin(let head): return Self.converted(head)
        case .relayed(let relayed):
            var writer = HeadWriter()
            var bytes = relayed.written(by: &writer, allocator: ByteBufferAllocator())
            var decoder = MessageDecoder(role: .response)
            decoder.expectResponse(ResponseContext(method: .get))
            guard case .head(let head) = try? decoder.next(&bytes) else {
                assertionFailure("a relayed head the codec cannot read back")
                return Self.converted(relayed.origin)
            }
            return Self.converted(head)
        }
    }

    static func converted(_ head: HTTP1Head) -> HTTPResponseHead {
        HTTPResponseHead(
            version: HTTPVersion(major: 1, minor: head.minorVersion),
            status: HTTPResponseStatus(statusCode: head.status),
            headers: HTTPHeaders(head.fieldList)
        )
    }

    mutating func addField(name: String, value: String) {
        changeOwn { $0.headers.add(name: name, value: value) }
    }

    /// Sets `name` to `value`: a relayed head drops the origin's lines of that name and writes
    /// the proxy's after its own fields.
    mutating func replaceOrAddField(name: String, value: String) {
        guard case .relayed(var relayed) = storage else {
            changeOwn { $0.headers.replaceOrAdd(name: name, value: value) }
            return
        }
        relayed.replaced = (name, value)
        storage = .relayed(relayed)
    }

    /// Changes the head as the proxy's own (an origin's is converted first). The storage lets go
    /// of it meanwhile, so the change happens in place rather than on a copy of its fields.
    private mutating func changeOwn(_ change: (inout HTTPResponseHead) -> Void) {
        var head = converted
        storage = Self.vacated
        change(&head)
        storage = .own(head)
    }

    private static let vacated = Storage.own(HTTPResponseHead(version: .http1_1, status: .ok))
}

/// An origin's final response head as the client gets it (`HeadWriter.responseHead`).
struct RelayedHead {
    var origin: HTTP1Head
    /// The client's HTTP version: 0 or 1.
    var minorVersion: Int
    /// The body goes to the client in chunks (a Transfer-Encoding field of the proxy's own).
    var chunked: Bool
    /// The proxy's Connection field, when it writes one.
    var connection: String?
    var via: String
    /// A field the proxy sets in place of the origin's of that name (`--request-id-header`).
    var replaced: (name: String, value: String)?

    func written(by writer: inout HeadWriter, allocator: ByteBufferAllocator) -> ByteBuffer {
        writer.responseHead(
            origin, minorVersion: minorVersion, chunked: chunked, connection: connection, via: via, replacing: replaced,
            allocator: allocator
        )
    }
}

extension ResponseHead {
    /// An interim (1xx) response as it goes to an HTTP/1.1 client: its status, without hop-by-hop fields.
    var interimForClient: ResponseHead {
        let head = converted
        var interim = HTTPResponseHead(version: .http1_1, status: head.status)
        for (name, value) in head.headers where !MessageRewriter.isHopByHop(name) {
            interim.headers.add(name: name, value: value)
        }
        return ResponseHead(interim)
    }

    /// The response as it goes to the client that sent `request`. An origin's final head is
    /// relayed from its own bytes (`relayed(_:)`); a 101 and the heads of the tests' own making
    /// go through `MessageRewriter.rewriteResponse`, which makes the same decisions on NIOHTTP1's
    /// head.
    func forClient(of request: RequestHead, clientKeepAlive: Bool, isUpgradeResponse: Bool, via: ViaHeader) throws(ProxyError) -> ClientResponse {
        if case .origin(let head) = storage, !isUpgradeResponse {
            return Self.relayed(head, request: request, clientKeepAlive: clientKeepAlive, via: via)
        }
        let rewritten = try MessageRewriter.rewriteResponse(
            converted,
            requestMethod: request.method,
            clientVersion: HTTPVersion(major: 1, minor: request.minorVersion),
            clientKeepAlive: clientKeepAlive,
            isUpgradeResponse: isUpgradeResponse,
            via: via
        )
        return ClientResponse(
            head: ResponseHead(rewritten.head),
            flow: ResponseFlow(
                clientFraming: rewritten.clientFraming,
                closeClient: rewritten.closeClient,
                upstreamWillClose: rewritten.upstreamWillClose
            )
        )
    }

    /// `MessageRewriter.rewriteResponse`'s decisions on the codec's head, which the upstream
    /// reader already checked (a framing it cannot relay never reaches here): the body framed as
    /// the origin framed it, or in chunks (HTTP/1.1 client) or until the close (HTTP/1.0 client)
    /// when the origin chunked it or ends it with the close; Connection when the client's
    /// persistence needs saying; Via for the version the origin answered with.
    static func relayed(_ head: HTTP1Head, request: RequestHead, clientKeepAlive: Bool, via: ViaHeader) -> ClientResponse {
        let code = head.status
        let hasNoBody = request.isHEAD || code < 200 || code == 204 || code == 304
        let upstreamFraming: ProxyHTTP.BodyFraming
        if hasNoBody {
            upstreamFraming = .none
        } else {
            switch head.framing {
            // A tunnel is a 101's or a CONNECT's, neither of which comes here.
            case .none, .tunnel: upstreamFraming = .none
            case .contentLength: upstreamFraming = .contentLength
            case .chunked: upstreamFraming = .chunked
            case .untilClose: upstreamFraming = .closeDelimited
            }
        }
        let upstreamWillClose = !head.keepAlive || upstreamFraming == .closeDelimited
        let clientIs11 = request.minorVersion >= 1
        let clientFraming: ProxyHTTP.BodyFraming
        switch upstreamFraming {
        case .none: clientFraming = .none
        case .contentLength: clientFraming = .contentLength
        case .chunked, .closeDelimited: clientFraming = clientIs11 ? .chunked : .closeDelimited
        }
        let closeClient = !clientKeepAlive || clientFraming == .closeDelimited
        let connection: String? = closeClient ? "close" : clientIs11 ? nil : "keep-alive"
        let relayed = RelayedHead(
            origin: head,
            minorVersion: clientIs11 ? 1 : 0,
            chunked: clientFraming == .chunked,
            connection: connection,
            via: via.value(receivedWith: head.minorVersion == 0 ? .http1_0 : .http1_1)
        )
        return ClientResponse(
            head: ResponseHead(storage: .relayed(relayed)),
            flow: ResponseFlow(clientFraming: clientFraming, closeClient: closeClient, upstreamWillClose: upstreamWillClose)
        )
    }
}
