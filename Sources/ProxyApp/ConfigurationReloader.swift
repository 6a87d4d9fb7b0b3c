import Logging
import NIOConcurrencyHelpers
import ProxyAdmin
import ProxyConfig
import ProxyKit
import ProxyUpstream

/// SIGHUP and the admin `POST /reload`: read the configuration again (file, environment, the
/// start's flags), apply what can change live, say what changed and what needs a restart. An
/// invalid configuration changes nothing: the running one stays, the error is logged and counted.
package final class ConfigurationReloader: Sendable {
    package struct Outcome: Sendable {
        package var ok: Bool
        package var message: String
        /// Option names (as `--help` spells them) applied to new requests, and needing a restart.
        var applied: [String] = []
        var needsRestart: [String] = []
    }

    /// Reads the configuration as a start would (`LoadedConfiguration.loadToServe` in the
    /// executable: file, environment, the start's flags, the start-up check).
    private let load: @Sendable () throws -> ProxyConfiguration
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
    package var status: ReloadStatus { last.withLockedValue { $0 } }

    package init(
        load: @escaping @Sendable () throws -> ProxyConfiguration, configuration: ProxyConfiguration, proxy: ProxyServer,
        resolvers: ResolverStack, metrics: ProxyMetrics?, logger: Logger
    ) {
        self.resolvers = resolvers
        self.load = load
        self.startup = configuration
        self.applied = NIOLockedValueBox(configuration)
        self.proxy = proxy
        self.metrics = metrics
        self.logger = logger
    }

    package func reload(trigger: String) -> Outcome {
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
            new = try load()
        } catch {
            return Outcome(ok: false, message: "\(error)")
        }
        let previous = applied.withLockedValue { $0 }
        let resolverLive = resolvers.canReload(from: startup, to: new) ? ResolverStack.reloadableFields(for: new.provider) : []
        let live = ProxyServer.reloadableFields.union(resolverLive)
        // The hosts file as started with, read again before anything is swapped: a bad file
        // fails the reload and the previous records stay.
        let hosts: HostsFile?
        do {
            hosts = try resolvers.localRecords.readAgain()
            try proxy.reload(new)
        } catch {
            return Outcome(ok: false, message: "\(error)")
        }
        if let hosts { resolvers.localRecords.use(hosts) }
        let differing = new.differingOptions(from: previous)
        if !resolverLive.isEmpty { resolvers.reload(to: new, changed: Set(differing)) }
        applied.withLockedValue { $0 = new }
        // Option names as --help spells them, in its order, from the option table.
        let changed = differing.filter { live.contains($0) }
        let needRestart = new.differingOptions(from: startup).filter { !live.contains($0) && $0 != ConfigOption.config.name }
        var lines: [String] = []
        lines.append(changed.isEmpty ? "applied: nothing changed" : "applied to new requests: " + changed.joined(separator: ", "))
        if !new.proxyAuth.isEmpty { lines.append("proxy-auth users and htpasswd files read again") }
        if startup.tlsListen != nil, new.tlsListen != nil { lines.append("tls-listen certificates read again (\(new.tlsCerts.count) files)") }
        if let staticList = resolvers.rereadStaticList() { lines.append(staticList) }
        if let hosts, let path = resolvers.localRecords.path { lines.append("hosts file \(path) read again: \(hosts.nameCount) names") }
        if !needRestart.isEmpty { lines.append("needs a restart (not applied): " + needRestart.joined(separator: ", ")) }
        return Outcome(ok: true, message: lines.joined(separator: "; "), applied: changed, needsRestart: needRestart)
    }
}
