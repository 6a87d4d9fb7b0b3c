import Logging
import NIOCore
import NIOPosix

extension ServerBootstrap {
    /// Every TCP listener of the process (forward, transparent, admin, DoH, DNS over TCP) shares
    /// one descriptor table: when it runs out, accept() fails on all of them at once, and a
    /// listener without `AcceptPauseHandler` spins its loop at 100 % while clients wait in its
    /// backlog. `listener` names it in the (rate-limited) warning.
    package func pausingAcceptOnShortage(
        _ listener: String, counters: AcceptPauseHandler.Counters = AcceptPauseHandler.Counters(),
        log: LogRateLimiter = LogRateLimiter(), logger: Logger
    ) -> ServerBootstrap {
        serverChannelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(
                    AcceptPauseHandler(counters: counters) { error in
                        log.run {
                            logger.warning(
                                "accept failed; pausing new connections for 100 ms",
                                metadata: ["listener": "\(listener)", "error": "\(error)", "suppressed": "\($0)"]
                            )
                        }
                    }
                )
            }
        }
    }
}
