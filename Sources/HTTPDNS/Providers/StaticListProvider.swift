import CurlTransport
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle

/// The self-hosted pattern: a JSON domain → IPs list fetched from a URL (or read from a file) and
/// refreshed periodically. Names not in the list, or a list with `enable: 0`, get `noData`, so the
/// caller falls back to system DNS.
public final class StaticListProvider: HTTPDNSProvider, Service {
    public enum Source: Sendable, Equatable {
        case url(String)
        case file(String)
    }

    public let name = "static"
    private let source: Source
    private let refresh: Duration
    private let transport: CurlTransport
    private let timeout: Duration
    private let caFile: String?
    private let pinnedAddresses: [String]
    private let logger: Logger
    private let document = NIOLockedValueBox<StaticListDocument?>(nil)
    /// What the last load left out (logged again only when it changes).
    private let lastProblems = NIOLockedValueBox<[StaticListProblem]>([])
    /// Opens when the first load attempt ends; an early resolve waits for it (up to `timeout`).
    private let firstLoad = FirstLoadGate()

    public init(
        source: Source,
        refresh: Duration,
        transport: CurlTransport,
        timeout: Duration,
        caFile: String?,
        pinnedAddresses: [String] = [],
        logger: Logger
    ) {
        self.pinnedAddresses = pinnedAddresses
        self.source = source
        self.refresh = refresh
        self.transport = transport
        self.timeout = timeout
        self.caFile = caFile
        self.logger = logger
    }

    /// Resolves waiting for the first load (tests line up on it).
    var firstLoadWaiters: Int { firstLoad.waiterCount }

    /// A list read and parsed, not yet in use.
    public struct Load: Sendable {
        public var document: StaticListDocument
        /// Entries and addresses left out, with their lines.
        public var problems: [StaticListProblem]
    }

    /// Where the list comes from, for messages: the file path or the URL.
    public var origin: String {
        switch source {
        case .file(let path): path
        case .url(let url): url
        }
    }

    /// Loads the list now; throws when it cannot be fetched or parsed (the previous list stays).
    public func reload() async throws(ResolveFailure) {
        defer { firstLoad.open() }
        switch source {
        case .file:
            if let load = try readFile() { use(load) }
        case .url(let url):
            var request = CurlRequest(url: url)
            request.timeout = timeout
            request.caFile = caFile
            request.pinnedAddresses = pinnedAddresses
            request.maxResponseBytes = 16 << 20
            let bytes: [UInt8]
            do {
                let response = try await transport.send(request)
                guard response.status == 200 else {
                    throw ResolveFailure(kind: .server, message: "static list answered HTTP \(response.status)", negativeTTL: nil)
                }
                bytes = response.body
            } catch let failure as ResolveFailure {
                throw failure
            } catch {
                throw ResolveFailure(kind: .network, message: "static list: \(error)", negativeTTL: nil)
            }
            use(try Self.parse(bytes, origin: url))
        }
    }

    /// For a file source: reads and parses the file now without using it (nil for a URL source).
    /// Throws when the file cannot be read or is not a list, naming the file.
    public func readFile() throws(ResolveFailure) -> Load? {
        guard case .file(let path) = source else { return nil }
        return try Self.readFile(path)
    }

    /// Reads and parses a static list file (also the start-up check).
    public static func readFile(_ path: String) throws(ResolveFailure) -> Load {
        guard FileManager.default.fileExists(atPath: path) else {
            throw ResolveFailure(kind: .network, message: "cannot read static list file \(path): no such file", negativeTTL: nil)
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ResolveFailure(kind: .network, message: "cannot read static list file \(path): not readable (a directory, or permissions?)", negativeTTL: nil)
        }
        return try parse(Array(data), origin: path)
    }

    private static func parse(_ bytes: [UInt8], origin: String) throws(ResolveFailure) -> Load {
        do {
            let (document, problems) = try StaticList.parseReporting(bytes)
            return Load(document: document, problems: problems)
        } catch {
            throw ResolveFailure(kind: .malformed, message: "static list \(origin): \(error)", negativeTTL: nil)
        }
    }

    /// Puts a list read by `readFile` (or fetched) in use; says what was left out when that changed.
    public func use(_ load: Load) {
        document.withLockedValue { $0 = load.document }
        let changed = lastProblems.withLockedValue { last in
            defer { last = load.problems }
            return last != load.problems
        }
        logger.info(
            "static list loaded",
            metadata: ["domains": "\(load.document.entries.count)", "enabled": "\(load.document.enabled)", "skipped": "\(load.problems.count)", "source": "\(origin)"])
        guard changed else { return }
        for problem in load.problems {
            logger.warning(
                "static list entry skipped",
                metadata: ["file": "\(origin)", "line": "\(problem.line)", "entry": "\(problem.entry)", "reason": "\(problem.reason)"])
        }
    }

    public func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                try await reload()
            } catch {
                let loaded = document.withLockedValue { $0 != nil }
                logger.warning(
                    loaded ? "static list refresh failed; keeping the previous list" : "static list not loaded; names go to the fallback until it loads",
                    metadata: ["error": "\(error.message)"])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: self.refresh) }
        }
    }

    public func resolve(_ host: String, families: AddressFamilies) async throws(ResolveFailure) -> ResolvedAnswer {
        if !firstLoad.isOpen { await firstLoad.wait(atMost: timeout) }
        guard let document = document.withLockedValue({ $0 }) else {
            throw ResolveFailure(kind: .network, message: "static list not loaded yet", negativeTTL: nil)
        }
        guard document.enabled else {
            throw ResolveFailure(kind: .noData, message: "static list disabled (enable: 0)", negativeTTL: .seconds(refresh.components.seconds))
        }
        let key = host.lowercased()
        guard let entry = document.entries[key] else {
            throw ResolveFailure(kind: .noData, message: "\(host) is not in the static list", negativeTTL: .seconds(refresh.components.seconds))
        }
        let ipv4 = families.wantsIPv4 ? entry.ipv4 : []
        let ipv6 = families.wantsIPv6 ? entry.ipv6 : []
        guard !ipv4.isEmpty || !ipv6.isEmpty else {
            throw ResolveFailure(kind: .noData, message: "\(host) has no addresses of the wanted family in the static list", negativeTTL: nil)
        }
        // Answers live as long as the list does until the next refresh.
        return ResolvedAnswer(ipv4: ipv4, ipv6: ipv6, ttl: refresh, serverIP: nil)
    }
}
