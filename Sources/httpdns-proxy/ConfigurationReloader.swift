#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import NIOConcurrencyHelpers
import ProxyConfig
import ProxyCore

/// SIGHUP and the admin `POST /reload`: read the configuration again (file, environment, the
/// start's flags), apply what can change live, say what changed and what needs a restart. An
/// invalid configuration changes nothing: the running one stays, the error is logged and counted.
final class ConfigurationReloader: Sendable {
    struct Outcome: Sendable {
        var ok: Bool
        var message: String
        /// Option names (as `--help` spells them) applied to new requests, and needing a restart.
        var applied: [String] = []
        var needsRestart: [String] = []
    }

    /// The command line the proxy started with: a reload reads it again with the file and environment.
    private let flags: CommandLineArguments
    private let startup: ProxyConfiguration
    private let applied: NIOLockedValueBox<ProxyConfiguration>
    private let proxy: ProxyServer
    private let resolvers: ResolverStack
    private let metrics: ProxyMetrics?
    private let logger: Logger
    /// One reload at a time (a signal and an admin request may race).
    private let lock = NIOLock()
    /// The last reload's outcome, for `/stats`.
    private let last = NIOLockedValueBox(ReloadStatus())

    /// What `/stats` shows under `reload`.
    var status: ReloadStatus { last.withLockedValue { $0 } }

    init(
        flags: CommandLineArguments, configuration: ProxyConfiguration, proxy: ProxyServer, resolvers: ResolverStack, metrics: ProxyMetrics?,
        logger: Logger
    ) {
        self.resolvers = resolvers
        self.flags = flags
        self.startup = configuration
        self.applied = NIOLockedValueBox(configuration)
        self.proxy = proxy
        self.metrics = metrics
        self.logger = logger
    }

    func reload(trigger: String) -> Outcome {
        lock.withLock {
            let outcome = attempt()
            metrics?.reloaded(ok: outcome.ok)
            last.withLockedValue {
                $0.record(
                    trigger: trigger, ok: outcome.ok, error: outcome.ok ? nil : outcome.message, applied: outcome.applied,
                    needsRestart: outcome.needsRestart)
            }
            if outcome.ok {
                logger.info(
                    "configuration reloaded",
                    metadata: [
                        "trigger": "\(trigger)", "result": "\(outcome.message)",
                        "applied": "\(outcome.applied.joined(separator: ","))",
                        "needs_restart": "\(outcome.needsRestart.joined(separator: ","))",
                    ])
            } else {
                logger.error("configuration reload failed; the running configuration stays", metadata: ["trigger": "\(trigger)", "error": "\(outcome.message)"])
            }
            return outcome
        }
    }

    private func attempt() -> Outcome {
        let new: ProxyConfiguration
        do {
            // The check `serve` and `config check` run: a reload refuses what a start would.
            new = try LoadedConfiguration.loadToServe(flags, environment: ProcessInfo.processInfo.environment)
        } catch {
            return Outcome(ok: false, message: "\(error)")
        }
        let previous = applied.withLockedValue { $0 }
        let resolverLive = resolvers.canReload(from: startup, to: new) ? ResolverStack.reloadableFields(for: new.provider) : []
        let live = ProxyServer.reloadableFields.union(resolverLive)
        do {
            try proxy.reload(new)
        } catch {
            return Outcome(ok: false, message: "\(error)")
        }
        let differing = new.differingOptions(from: previous)
        if !resolverLive.isEmpty { resolvers.reload(to: new, changed: Set(differing)) }
        applied.withLockedValue { $0 = new }
        // Option names as --help spells them, in its order, from the option table.
        let changed = differing.filter { live.contains($0) }
        let needRestart = new.differingOptions(from: startup).filter { !live.contains($0) && $0 != ConfigOption.config.name }
        var lines: [String] = []
        lines.append(changed.isEmpty ? "applied: nothing changed" : "applied to new requests: " + changed.joined(separator: ", "))
        if !new.proxyAuth.isEmpty { lines.append("proxy-auth users and htpasswd files read again") }
        if let staticList = resolvers.rereadStaticList() { lines.append(staticList) }
        if !needRestart.isEmpty { lines.append("needs a restart (not applied): " + needRestart.joined(separator: ", ")) }
        return Outcome(ok: true, message: lines.joined(separator: "; "), applied: changed, needsRestart: needRestart)
    }
}
