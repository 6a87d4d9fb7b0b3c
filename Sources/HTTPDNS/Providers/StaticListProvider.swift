import CurlTransport
import Foundation
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

    /// Loads the list now; throws when it cannot be fetched or parsed (the previous list stays).
    public func reload() async throws(ResolveFailure) {
        defer { firstLoad.open() }
        let bytes: [UInt8]
        switch source {
        case .file(let path):
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ResolveFailure(kind: .network, message: "cannot read static list file \(path)", negativeTTL: nil)
            }
            bytes = Array(data)
        case .url(let url):
            var request = CurlRequest(url: url)
            request.timeout = timeout
            request.caFile = caFile
            request.pinnedAddresses = pinnedAddresses
            request.maxResponseBytes = 16 << 20
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
        }
        do {
            let parsed = try StaticList.parse(bytes)
            document.withLockedValue { $0 = parsed }
            logger.info("static list loaded", metadata: ["domains": "\(parsed.entries.count)", "enabled": "\(parsed.enabled)"])
        } catch {
            throw ResolveFailure(kind: .malformed, message: "static list: \(error)", negativeTTL: nil)
        }
    }

    public func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                try await reload()
            } catch {
                logger.warning("static list refresh failed; keeping the previous list", metadata: ["error": "\(error.message)"])
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
