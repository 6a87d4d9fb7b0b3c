import ProxyKit

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NIOCore
import NIOHTTP1
import NIOPosix

/// One `GET /healthz` against the admin listener: what `httpdns-proxy healthcheck` runs, so a
/// container image needs no curl for its HEALTHCHECK.
package enum HealthProbe {
    package enum Outcome: Sendable, Equatable {
        case healthy
        case unhealthy(reason: String)
    }

    /// The address to connect to for a listener bound to `host`: a wildcard bind is reached
    /// through the loopback address of the same family.
    package static func connectHost(forListener host: String) -> String {
        switch host {
        case "0.0.0.0": "127.0.0.1"
        case "::": "::1"
        default: host
        }
    }

    /// Healthy only for a 200 answer within `timeout` (connect included); otherwise the reason.
    package static func check(
        host: String, port: Int, timeout: TimeAmount = .seconds(2), group: any EventLoopGroup
    ) async -> Outcome {
        let eventLoop = group.next()
        let outcome = eventLoop.makePromise(of: Outcome.self)
        let deadline = eventLoop.scheduleTask(in: timeout) {
            outcome.succeed(.unhealthy(reason: "no answer within \(timeout.nanoseconds / 1_000_000) ms"))
        }
        let hostHeader = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        let connect = ClientBootstrap(group: eventLoop)
            .connectTimeout(timeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(ProbeHandler(host: hostHeader, outcome: outcome))
                }
            }
            .connect(host: host, port: port)
        connect.whenFailure { error in
            outcome.succeed(.unhealthy(reason: "cannot connect: \(describe(error))"))
        }
        // The first completion wins: later ones (the deadline, a close) are no-ops.
        let result = try? await outcome.futureResult.get()
        deadline.cancel()
        if let channel = try? await connect.get() {
            try? await channel.close()
        }
        return result ?? .unhealthy(reason: "probe failed")
    }

    /// errno text for socket errors ("Connection refused") rather than NIO's debug description.
    static func describe(_ error: any Error) -> String {
        if let connection = error as? NIOConnectionError, let first = connection.connectionErrors.first {
            return describe(first.error)
        }
        if let io = error as? IOError {
            return String(cString: strerror(io.errnoCode))
        }
        if let channel = error as? ChannelError, case .connectTimeout = channel {
            return "connect timed out"
        }
        return "\(error)"
    }
}

/// Sends the request once connected and completes `outcome` from the response.
private final class ProbeHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let host: String
    private let outcome: EventLoopPromise<HealthProbe.Outcome>
    private var status: HTTPResponseStatus?
    private var body = ""

    init(host: String, outcome: EventLoopPromise<HealthProbe.Outcome>) {
        self.host = host
        self.outcome = outcome
    }

    func channelActive(context: ChannelHandlerContext) {
        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/healthz")
        head.headers.add(name: "Host", value: host)
        head.headers.add(name: "Connection", value: "close")
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = head.status
        case .body(let buffer):
            if body.utf8.count < 200 { body += String(buffer: buffer) }
        case .end:
            let text = body.trimmingSpaces()
            let answer = "\(status?.code ?? 0)" + (text.isEmpty ? "" : " \(text)")
            outcome.succeed(status == .ok ? .healthy : .unhealthy(reason: "/healthz answered \(answer)"))
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        outcome.succeed(.unhealthy(reason: "the connection closed before a complete answer"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        outcome.succeed(.unhealthy(reason: "\(HealthProbe.describe(error))"))
        context.close(promise: nil)
    }
}

extension String {
    fileprivate func trimmingSpaces() -> String {
        String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}
