import NIOCore
import NIOHTTP1

/// The PAC file and purging, kept apart from the JSON routes.
extension AdminRoutes {
    /// `/proxy.pac`, naming the proxy as `pac` says (404 when the server was built without it).
    func pacFile(requestHost: String?) -> Response {
        guard let pac = backend.pac else { return .text(.notFound, "no PAC file: the proxy listener is not known here") }
        let body = PACFile.render(proxy: pac.proxyAddress(requestHost: requestHost), bypass: pac.bypass)
        return Response(status: .ok, contentType: PACFile.contentType, body: body)
    }

    /// Purge means "stop using that address": forget the cached answer (if there is an HTTPDNS cache)
    /// and close the idle upstream connections to the host, so the next request resolves and dials
    /// afresh. `host` nil purges everything.
    func purge(host: String?, on eventLoop: any EventLoop) -> EventLoopFuture<Response> {
        let caching = backend.resolvers?.caching
        caching?.purge(host)
        let closed = backend.retirePooledConnections(host: host, on: eventLoop) ?? eventLoop.makeSucceededFuture(0)
        return closed.map { count in
            var text = host.map { "purged \($0)" } ?? "purged all"
            if caching == nil { text += " (no HTTPDNS cache with --provider system)" }
            if let forwarded = backend.purgeForwardedAnswers(host) {
                text += "; forgot \(forwarded) forwarded DNS answer\(forwarded == 1 ? "" : "s")"
            }
            text += "; closed \(count) pooled connection\(count == 1 ? "" : "s")"
            return .text(.ok, text)
        }
    }
}

