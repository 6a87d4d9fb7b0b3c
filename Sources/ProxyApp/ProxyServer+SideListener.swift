import Logging
import NIOCore
import NIOPosix
import ProxyConfig
import ProxyKit

extension ProxyServer {
    /// Binds a listener beside the proxy's own (`--transparent-listen`, `--socks-listen`): a bind
    /// failure names the listener and its option; the bound address joins the proxy's own
    /// listeners (never dialed as an origin) and is logged with `message`.
    func bindSideListener(
        _ bootstrap: ServerBootstrap, at listen: HostPort, listener: String, option: String, message: Logger.Message
    ) async throws -> any Channel {
        let channel: any Channel
        do {
            channel = try await bootstrap.bind(host: listen.host, port: listen.port).get()
        } catch {
            throw ListenerBindError(listener: listener, option: option, host: listen.host, port: listen.port, error: error)
        }
        if let address = channel.localAddress {
            ownListeners.add(address)
            logger.info(message, metadata: ["address": "\(address.endpointText)"])
        }
        return channel
    }
}
