import Logging
import NIOCore
import NetworkWatch
import ProxyUpstream

extension NetworkChangeResponder {
    /// The responder of a running server: its IP health, its pools, its resolver stack.
    package init(proxy: ProxyServer, resolvers: ResolverStack, eventLoop: any EventLoop, logger: Logger) {
        self.init(
            resetHealth: { proxy.ipHealth.reset() },
            retirePooled: { (try? await proxy.retirePooledConnections(host: nil, on: eventLoop).get()) ?? 0 },
            resolver: { await resolvers.networkDidChange() },
            logger: logger
        )
    }
}
