import Logging
import NIOCore
import NIOPosix
import ProxyAccess
import ProxyConfig
import ProxyKit
import ProxyUpstream
import TransparentProxy

extension ProxyServer {
    /// Tracks an accepted client connection and applies the client ACL and connection limits
    /// (both listeners); a refusal is counted and logged here.
    static func admit(
        _ channel: any Channel, tracker: ChannelTracker, admission: ClientAdmission, metrics: ProxyMetrics?,
        refusalLog: LogRateLimiter, logger: Logger
    ) -> ClientAdmission.Verdict {
        tracker.add(channel)
        let (verdict, client) = admission.admit(channel.remoteAddress)
        if let client {
            metrics?.clientConnections.increment()
            channel.closeFuture.whenComplete { _ in
                admission.release(client)
                metrics?.clientConnections.decrement()
            }
        }
        if let refusal = verdict.error {
            metrics?.rejected(refusal)
            refusalLog.run {
                logger.notice(
                    "client connection refused",
                    metadata: [
                        "client": "\(channel.remoteAddress.map(\.endpointText) ?? "?")",
                        "reason": "\(refusal.shortDescription)", "suppressed": "\($0)",
                    ]
                )
            }
        }
        return verdict
    }

    /// Binds `--transparent-listen` (nil when off). Its connections start with
    /// `TransparentConnectionHandler`, which reads only while it peeks (autoRead off).
    func bindTransparentListener() async throws -> (any Channel)? {
        guard let listen = configuration.transparentListen else { return nil }
        let shared = TransparentContext(env: env, resolver: connector.resolver, stats: transparentStats, ownListeners: ownListeners,
            ownConnections: connector.ownConnections ?? OwnConnections())
        let tracker = self.tracker
        let admission = self.admission
        let refusalLog = self.refusalLog
        let logger = self.logger
        let metrics = env.metrics
        let bootstrap = listenerBootstrap()
            // One read per read() while peeking: what is held before deciding stays near the limit.
            .childChannelOption(.autoRead, value: false)
            .childChannelOption(.maxMessagesPerRead, value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let verdict = Self.admit(channel, tracker: tracker, admission: admission, metrics: metrics, refusalLog: refusalLog, logger: logger)
                    try channel.pipeline.syncOperations.addHandler(TransparentConnectionHandler(shared: shared, admission: verdict))
                }
            }
        return try await bindSideListener(
            bootstrap, at: listen, listener: "transparent", option: "--transparent-listen", message: "transparent listener ready")
    }

    /// `/stats` → `transparent`; nil when the transparent listener is off.
    package var transparentSnapshot: TransparentStats.Snapshot? {
        configuration.transparentListen == nil ? nil : transparentStats.snapshot
    }
}
