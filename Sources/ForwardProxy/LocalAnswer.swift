import NIOHTTP1
import ProxyAccess
import ProxyHTTP
import ProxyKit
import ProxyUpstream

/// A response the proxy gives itself instead of forwarding the request.
struct LocalAnswer {
    var head: HTTPResponseHead
    var body: String

    /// TRACE or OPTIONS with `Max-Forwards: 0` (RFC 9110 §7.6.2): this proxy is the final
    /// recipient. TRACE echoes the request head as `message/http` (§9.3.8) without the fields that
    /// carry credentials; OPTIONS says what the proxy forwards.
    static func forMaxForwardsZero(_ request: HTTPRequestHead, via: ViaHeader) -> LocalAnswer {
        var head = HTTPResponseHead(version: .http1_1, status: .ok)
        var body = ""
        if request.method == .TRACE {
            head.headers.add(name: "Content-Type", value: "message/http")
            body = "TRACE \(request.uri) HTTP/\(request.version.major).\(request.version.minor)\r\n"
            for (name, value) in request.headers where !Self.isCredential(name) {
                body += "\(name): \(value)\r\n"
            }
            body += "\r\n"
        } else {
            head.headers.add(name: "Allow", value: "GET, HEAD, POST, PUT, DELETE, OPTIONS, TRACE, PATCH, CONNECT")
        }
        head.headers.add(name: "Via", value: via.value(receivedWith: request.version))
        return LocalAnswer(head: head, body: body)
    }

    private static func isCredential(_ name: String) -> Bool {
        ["authorization", "proxy-authorization", "cookie"].contains { ASCII.equalsLowercase(name, $0) }
    }
}
