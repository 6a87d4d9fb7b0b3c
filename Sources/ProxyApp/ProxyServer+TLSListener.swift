import ForwardProxy
import NIOCore
import OpenSSLTLS
import ProxyConfig
import ProxyKit
import SOCKSProxy

extension ProxyServer {
    /// The TLS listener's server context for `configuration`, or nil without `tls-listen`: its
    /// certificates (`tls-cert`, `tls-key`: one key per certificate, or each certificate file holds
    /// its key), client certificates (`tls-client-ca`), the handshake bounded by `header-timeout`.
    package static func makeTLSServerContext(_ configuration: ProxyConfiguration) throws(TLSError) -> TLSServerContext? {
        guard configuration.tlsListen != nil else { return nil }
        let keys = configuration.tlsKeys.isEmpty ? configuration.tlsCerts : configuration.tlsKeys
        var server = TLSServerConfiguration(
            identities: zip(configuration.tlsCerts, keys).map { TLSServerConfiguration.Identity(certificateFile: $0, keyFile: $1) },
            clientCAFile: configuration.tlsClientCA
        )
        server.handshakeTimeout = configuration.headerTimeout.duration
        return try TLSServerContext(configuration: server)
    }

    /// Binds `--tls-listen` when set. Each connection starts with the TLS server handshake (the
    /// context in force when it was accepted: a reload's new certificates apply to new
    /// connections), then is served as a connection to `--listen` is: the first byte decides
    /// between HTTP and SOCKS when `listen-socks` is on.
    func bindTLSListener() async throws -> (any Channel)? {
        guard let listen = configuration.tlsListen else { return nil }
        let env = self.env
        let tracker = self.tracker
        let admission = self.admission
        let refusalLog = self.refusalLog
        let logger = self.logger
        let metrics = env.metrics
        let tlsServer = self.tlsServer
        let mixed = configuration.listenSOCKS
        let bootstrap = listenerBootstrap()
            .childChannelOption(.maxMessagesPerRead, value: 16)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    guard let server = tlsServer.withLockedValue({ $0 }) else {
                        throw ChannelError.ioOnClosedChannel
                    }
                    let verdict = Self.admit(channel, tracker: tracker, admission: admission, metrics: metrics, refusalLog: refusalLog, logger: logger)
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(OpenSSLHandler(server: server) { failure in
                        metrics?.tlsListenerHandshake(ok: failure == nil)
                        if let failure {
                            logger.debug("tls listener handshake failed", metadata: ["reason": "\(failure)"])
                        }
                    })
                    if mixed {
                        try sync.addHandler(MixedPortHandler(env: env, admission: verdict))
                    } else {
                        try ClientPipeline.configure(channel, env: env, admission: verdict)
                    }
                }
            }
        let channel = try await bindSideListener(bootstrap, at: listen, listener: "tls", option: "--tls-listen", message: "tls listening")
        if let server = tlsServer.withLockedValue({ $0 }) {
            logger.info("tls listener certificates", metadata: ["names": "\(server.certificateNames.map { $0.joined(separator: ",") }.joined(separator: "; "))"])
            if let expiry = server.earliestExpiry { metrics?.tlsListenerCertificatesExpire(at: expiry) }
        }
        return channel
    }
}
