import Logging
import ProxyConfig

/// `--hosts-file`: read at start (the start-up check refused a file that cannot be used) and again
/// on reload.
extension ResolverStack {
    /// The records of `configuration.hostsFile` (none without one). A file that became unusable
    /// since the start-up check is logged and leaves no records.
    static func loadLocalRecords(_ configuration: ProxyConfiguration, logger: Logger) -> LocalRecords {
        guard let path = configuration.hostsFile else { return LocalRecords(path: nil) }
        do {
            let records = try LocalRecords.load(path)
            logger.info("hosts file loaded", metadata: ["file": "\(path)", "names": "\(records.nameCount)", "entries": "\(records.entryCount)"])
            return LocalRecords(path: path, records: records)
        } catch {
            logger.error("hosts file not loaded", metadata: ["file": "\(path)", "error": "\(error)"])
            return LocalRecords(path: path)
        }
    }

    /// A hosts file that cannot be used: a configuration error at start (exit 64) and on reload
    /// (nothing changes), naming the file and the first bad line.
    package static func hostsFileProblem(_ configuration: ProxyConfiguration) -> String? {
        guard let path = configuration.hostsFile else { return nil }
        do {
            _ = try LocalRecords.load(path)
            return nil
        } catch {
            return "--hosts-file: \(error)"
        }
    }

    /// What `httpdns-proxy resolve` prints for a name the hosts file gives (nil: it does not).
    func localReport(_ host: String, started: ContinuousClock.Instant) -> ResolveReport? {
        guard let found = localRecords.addresses(of: host) else { return nil }
        return ResolveReport(
            text: Self.report(
                host: host, provider: "hosts-file", source: ResolutionSource.local.rawValue, v4: found.ipv4, v6: found.ipv6, ttl: nil,
                rtt: ContinuousClock.now - started, server: localRecords.path))
    }
}
