import NIOCore
import ProxyKit
import SOCKSProxy

extension ProxyServer {
    /// Binds `--socks-listen` when set: each connection gets a `SOCKSConnectionHandler`, after the
    /// client ACL and connection limits (shared with the other listeners). autoRead is off: the
    /// handshake reads only when it wants bytes.
    func bindSOCKSListener() async throws -> (any Channel)? {
        guard let listen = configuration.socksListen else { return nil }
        let env = self.env
        let tracker = self.tracker
        let admission = self.admission
        let refusalLog = self.refusalLog
        let logger = self.logger
        let metrics = env.metrics
        let bootstrap = listenerBootstrap()
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let verdict = Self.admit(channel, tracker: tracker, admission: admission, metrics: metrics, refusalLog: refusalLog, logger: logger)
                    try channel.pipeline.syncOperations.addHandler(SOCKSConnectionHandler(env: env, admission: verdict))
                }
            }
        return try await bindSideListener(bootstrap, at: listen, listener: "socks", option: "--socks-listen", message: "socks listening")
    }
}
