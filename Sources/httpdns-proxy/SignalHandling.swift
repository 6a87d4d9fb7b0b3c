#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Logging
import ProxyApp
import ProxyKit
import ServiceLifecycle
import UnixSignals

/// What each signal does, besides SIGTERM and SIGINT (graceful shutdown, in the service group):
///
/// - SIGHUP: reopen the access log, then reload the configuration;
/// - SIGUSR1: reopen the access log (log rotation; the nginx and squid convention);
/// - SIGUSR2: nothing (logged), and SIGPIPE: nothing — neither ends the process.
enum SignalHandling {
    /// The trapped signals, registered before the listeners open: once the proxy says it is
    /// listening, a SIGUSR1 from logrotate reaches the handler instead of killing the process.
    /// Until then (from the first line of `serve`) they are ignored, and SIGPIPE stays ignored.
    static func install() async -> UnixSignalsSequence {
        for number in [SIGHUP, SIGUSR1, SIGUSR2, SIGPIPE] {
            _ = signal(number, SIG_IGN)
        }
        return await UnixSignalsSequence(trapping: .sighup, .sigusr1, .sigusr2)
    }
}

/// Acts on SIGHUP, SIGUSR1 and SIGUSR2 until shutdown.
struct SignalService: Service {
    let signals: UnixSignalsSequence
    let reloader: ConfigurationReloader
    let accessLog: AccessLogWriter
    /// Other logs reopened with the access log (`dns-query-log`).
    var otherLogs: [AccessLogWriter] = []
    let systemd: SystemdNotifier
    let logger: Logger

    func run() async throws {
        await cancelWhenGracefulShutdown {
            for await signal in signals {
                switch signal {
                case .sighup:
                    systemd.reloading()
                    reopen(trigger: "SIGHUP")
                    _ = await reloader.reloadOffTheEventLoops(trigger: "SIGHUP")
                    systemd.ready()
                case .sigusr1:
                    reopen(trigger: "SIGUSR1")
                default:
                    logger.notice("signal ignored (SIGHUP reloads, SIGUSR1 reopens the access log, SIGTERM stops)", metadata: ["signal": "\(signal)"])
                }
            }
        }
    }

    private func reopen(trigger: String) {
        for (index, log) in ([accessLog] + otherLogs).enumerated() {
            guard let path = log.path else { continue }
            let name = index == 0 ? "access log" : "query log"
            do {
                try log.reopen()
                logger.info("\(name) reopened", metadata: ["trigger": "\(trigger)", "path": "\(path)"])
            } catch {
                logger.error(
                    "\(name) not reopened; still writing to the file open before", metadata: ["trigger": "\(trigger)", "path": "\(path)", "error": "\(error)"])
            }
        }
    }
}
