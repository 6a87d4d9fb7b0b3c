import NIOCore
import NIOHTTP1

/// On a transparent connection's HTTP pipeline: turns each request's origin-form target
/// (`GET /path` + `Host: name`) into the absolute form the forward path serves
/// (`GET http://name:port/path`), so every request goes where its own Host says, on the port the
/// client dialed when the Host names none. A request without a usable Host stays origin-form and
/// gets the forward path's 400.
final class TransparentRequestTargetHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ClientRequestEvent
    typealias InboundOut = ClientRequestEvent

    let originalPort: Int
    /// The reader in front: a head waits there for the connection handler, and is rewritten there.
    let reader: ClientRequestReader

    init(originalPort: Int, reader: ClientRequestReader) {
        self.originalPort = originalPort
        self.reader = reader
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data), let head = reader.pendingHead, let uri = Self.absoluteTarget(head, originalPort: originalPort) {
            reader.pendingHead?.setTarget(uri)
        }
        context.fireChannelRead(data)
    }

    /// `http://HOST[:PORT]PATH` for an origin-form request with exactly one Host of a name or an
    /// IP literal with an optional port; nil when the target is not origin-form or Host is unusable.
    static func absoluteTarget(_ head: RequestHead, originalPort: Int) -> String? {
        guard head.uri.hasPrefix("/"), !head.isConnect else { return nil }
        let hosts = head.hostFields
        guard hosts.count == 1, let host = hosts.first, !host.isEmpty, host.utf8.count <= 261 else { return nil }
        let allowed = host.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "["), UInt8(ascii: "]"):
                true
            default: false
            }
        }
        guard allowed else { return nil }
        let hasPort = host.hasSuffix("]") ? false : (host.hasPrefix("[") ? host.contains("]:") : host.contains(":"))
        let authority = hasPort || originalPort == 80 ? host : "\(host):\(originalPort)"
        return "http://\(authority)\(head.uri)"
    }
}
