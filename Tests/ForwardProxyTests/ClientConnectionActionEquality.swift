import HTTP1Codec
import NIOCore
import NIOHTTP1
import NIOPosix
import ProxyConfig

@testable import ProxyKit
@testable import ProxyHTTP
@testable import ProxyAccess
@testable import ProxyUpstream
@testable import ForwardProxy

// Equality of the forward machine's actions and the proxy's own message types: for the tests'
// expectations only (the handler never compares actions).

extension ClientConnectionAction {
    static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.effect == rhs.effect && lhs.then == rhs.then
    }

    /// The action is exactly `effect`, with nothing following it.
    static func == (lhs: Self, rhs: Effect) -> Bool {
        lhs.then.isEmpty && lhs.effect == rhs
    }

    static func != (lhs: Self, rhs: Effect) -> Bool {
        !(lhs == rhs)
    }
}

// Conformances in another file than the type cannot be synthesized: spelled out, case by case.
extension ClientConnectionAction.Effect: Equatable {
    public static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.none, .none), (.attachDialedUpstream, .attachDialedUpstream), (.closeAfterLastWrite, .closeAfterLastWrite):
            return true
        case (.scheduleTimer(let a), .scheduleTimer(let b)):
            return a == b
        case (.connectUpstream(let a), .connectUpstream(let b)):
            return a == b
        case (.sendRequest(let a1, let a2, let a3, let a4), .sendRequest(let b1, let b2, let b3, let b4)):
            return a1 == b1 && a2 == b2 && a3 == b3 && a4 == b4
        case (.writeUpstream(let a1, let a2), .writeUpstream(let b1, let b2)):
            return a1 == b1 && a2 == b2
        case (.upstreamReads(let a), .upstreamReads(let b)):
            return a == b
        case (.writeClient(let a1, let a2), .writeClient(let b1, let b2)):
            return a1 == b1 && a2 == b2
        case (.finishExchange(let a1, let a2, let a3, let a4), .finishExchange(let b1, let b2, let b3, let b4)):
            return a1 == b1 && a2 == b2 && a3 == b3 && a4 == b4
        case (.respondWithError(let a1, let a2, let a3), .respondWithError(let b1, let b2, let b3)):
            return a1 == b1 && a2 == b2 && a3 == b3
        case (.authenticate(let a1, let a2), .authenticate(let b1, let b2)):
            return a1 == b1 && a2 == b2
        case (.refuseCredentials(let a1, let a2, let a3), .refuseCredentials(let b1, let b2, let b3)):
            return a1 == b1 && a2 == b2 && a3 == b3
        case (.respondLocally(let a1, let a2), .respondLocally(let b1, let b2)):
            return a1 == b1 && a2 == b2
        case (.close(let a1, let a2), .close(let b1, let b2)):
            return a1 == b1 && a2 == b2
        case (.retryUpstream(let a1, let a2), .retryUpstream(let b1, let b2)):
            return a1 == b1 && a2 == b2
        case (.upstreamFailed(let a1, let a2), .upstreamFailed(let b1, let b2)):
            return a1 == b1 && a2 == b2
        case (.connectTunnel(let a), .connectTunnel(let b)):
            return a == b
        case (.beginTunnelSwitch(let a), .beginTunnelSwitch(let b)):
            return a == b
        case (.installTunnel(let a1, let a2, let a3, let a4, let a5), .installTunnel(let b1, let b2, let b3, let b4, let b5)):
            return a1 == b1 && a2 == b2 && a3 == b3 && a4 == b4 && a5 == b5
        default:
            return false
        }
    }
}

extension ClientConnectionAction.AfterExchange: Equatable {
    public static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.next(let a), .next(let b)): a == b
        case (.closeAfterLastWrite, .closeAfterLastWrite): true
        default: false
        }
    }
}

extension ErrorAnswer: Equatable {
    public static func == (lhs: ErrorAnswer, rhs: ErrorAnswer) -> Bool {
        lhs.error == rhs.error && lhs.head == rhs.head && lhs.body == rhs.body
    }
}

extension ProxyAnswer: Equatable {
    public static func == (lhs: ProxyAnswer, rhs: ProxyAnswer) -> Bool { lhs.head == rhs.head && lhs.body == rhs.body }
}

/// Raw bytes have no equality: held bytes compare by their count.
extension HeldBytes: Equatable {
    public static func == (lhs: HeldBytes, rhs: HeldBytes) -> Bool { lhs.parts.count == rhs.parts.count }
}

extension ProxyAuthenticator: Equatable {
    public static func == (lhs: ProxyAuthenticator, rhs: ProxyAuthenticator) -> Bool { lhs === rhs }
}

/// Heads compare as NIOHTTP1 heads: an outgoing head as the origin reads it.
extension RequestHead: Equatable {
    public static func == (lhs: RequestHead, rhs: RequestHead) -> Bool { lhs.converted == rhs.converted && lhs.bytesFollowed == rhs.bytesFollowed }
}

/// Heads compare by the bytes the client gets: a relayed origin head equals the NIOHTTP1 head
/// that writes the same lines.
extension ResponseHead: Equatable {
    public static func == (lhs: ResponseHead, rhs: ResponseHead) -> Bool { lhs.wire == rhs.wire }

    var wire: String {
        var writer = ClientResponseWriter()
        return String(buffer: writer.head(self, allocator: ByteBufferAllocator()))
    }
}

extension HeaderFields: Equatable {
    public static func == (lhs: HeaderFields, rhs: HeaderFields) -> Bool { lhs.storage == rhs.storage }
}

extension RequestPart: Equatable {
    public static func == (lhs: RequestPart, rhs: RequestPart) -> Bool {
        switch (lhs, rhs) {
        case (.head(let a), .head(let b)): a == b
        case (.body(let a), .body(let b)): a == b
        case (.end(let a), .end(let b)): a == b
        default: false
        }
    }
}

extension ResponsePart: Equatable {
    public static func == (lhs: ResponsePart, rhs: ResponsePart) -> Bool {
        switch (lhs, rhs) {
        case (.head(let a), .head(let b)): a == b
        case (.body(let a), .body(let b)): a == b
        case (.end(let a), .end(let b)): a == b
        default: false
        }
    }
}

extension ClientConnectionState.Phase: Equatable {
    public static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.idle(let a), .idle(let b)): a == b
        case (.exchange, .exchange), (.authenticating, .authenticating), (.discardingRefusedRequest, .discardingRefusedRequest),
            (.tunnel, .tunnel), (.closing, .closing), (.closed, .closed):
            true
        default: false
        }
    }
}

// The tests' shorthand for the proxy's own types.

extension RequestHead {
    /// A head as a client sends it: its bytes parsed by the codec, as the client reader does. A
    /// head the codec refuses (the tests of framing the rewriter refuses) stays NIOHTTP1's.
    init(_ method: HTTPMethod, _ uri: String, _ fields: [(String, String)] = [], version: HTTPVersion = .http1_1) {
        var text = "\(method.rawValue) \(uri) HTTP/\(version.major).\(version.minor)\r\n"
        for (name, value) in fields { text += "\(name): \(value)\r\n" }
        var decoder = MessageDecoder(role: .request)
        var buffer = ByteBuffer(string: text + "\r\n")
        guard case .head(let head) = try? decoder.next(&buffer) else {
            self.init(HTTPRequestHead(version: version, method: method, uri: uri, headers: HTTPHeaders(fields)))
            return
        }
        self.init(parsed: head)
    }

    var headers: HTTPHeaders { converted.headers }
    var fields: HeaderFields { HeaderFields(converted.headers) }
}

extension ResponseHead {
    /// A head as an origin sends it: its bytes parsed by the codec, as the upstream reader does
    /// (after a GET that asked to upgrade, so that a 101 is one).
    init(_ status: HTTPResponseStatus, _ fields: [(String, String)] = []) {
        var text = "HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\n"
        for (name, value) in fields { text += "\(name): \(value)\r\n" }
        var decoder = MessageDecoder(role: .response)
        decoder.expectResponse(ResponseContext(method: .get, upgradeRequested: true))
        var buffer = ByteBuffer(string: text + "\r\n")
        guard case .head(let head) = try? decoder.next(&buffer) else { fatalError("the codec refused the test's head: \(text)") }
        self.init(origin: head)
    }

    var status: HTTPResponseStatus { converted.status }
    var headers: HTTPHeaders { converted.headers }
}

extension ErrorAnswer {
    // What the tests ask of the error an answer says.
    var status: HTTPResponseStatus { error.status }
    var message: String { error.message }
    var shortDescription: String { error.shortDescription }
    var asksToRetryLater: Bool { error.asksToRetryLater }

    /// An answer matches the error it says (`case .respondWithError(error, ...)`).
    static func ~= (pattern: ProxyError, value: ErrorAnswer) -> Bool { pattern == value.error }
}

extension ProxyAuthenticator {
    /// alice:secret, checked without hashing (no thread pool runs).
    static let forTests: ProxyAuthenticator = {
        var configuration = ProxyConfiguration.defaults
        configuration.proxyAuth = [.credential(user: "alice", password: "secret")]
        return try! ProxyAuthenticator.make(configuration, threadPool: NIOThreadPool(numberOfThreads: 1))!
    }()
}
