import CurlTransport
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle

/// Keeps the Alibaba query servers on the IPs the service schedules for the account: asks the
/// bootstrap IPs `/{account}/ss` at start, every `refreshInterval`, after a whole rotation of
/// service IPs failed and after a network change, and installs the answer in `servers`. Runs as
/// a service; `requestRefresh` only wakes it.
public final class AlibabaServiceScheduler: Service, Sendable {
    public struct Settings: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
        /// The service root URL (the path is appended; its host is the TLS name).
        public var serviceRoot: String
        public var accountID: String
        /// The account secret as configured (text): `/ss` signs with md5(nonce-secret-expiry).
        public var secret: String?
        public var sdkVersion: String
        /// 0: only the start fetch and the triggered ones.
        public var refreshInterval: Duration
        public var timeout: Duration
        public var caFile: String?
        /// Whether scheduled IPv6 service IPs are used (not when this host has no IPv6 route).
        public var useIPv6ServiceIPs: @Sendable () -> Bool

        public init(
            serviceRoot: String, accountID: String, secret: String?, sdkVersion: String, refreshInterval: Duration, timeout: Duration,
            caFile: String?, useIPv6ServiceIPs: @escaping @Sendable () -> Bool = { true }
        ) {
            var root = serviceRoot
            while root.hasSuffix("/") { root.removeLast() }
            self.serviceRoot = root
            self.accountID = accountID
            self.secret = secret
            self.sdkVersion = sdkVersion
            self.refreshInterval = refreshInterval
            self.timeout = timeout
            self.caFile = caFile
            self.useIPv6ServiceIPs = useIPv6ServiceIPs
        }

        /// Never the secret (it signs `/ss`).
        public var description: String {
            "Settings(serviceRoot: \(serviceRoot), accountID: \(accountID), secret: \(secret == nil ? "nil" : "<redacted>"), "
                + "refreshInterval: \(refreshInterval))"
        }

        public var debugDescription: String { description }

        public var customMirror: Mirror {
            Mirror(self, children: ["serviceRoot": serviceRoot, "accountID": accountID, "signed": secret != nil,
                                    "refreshInterval": refreshInterval], displayStyle: .struct)
        }
    }

    public let servers: ResolverServers
    private let settings: Settings
    private let transport: CurlTransport
    private let state: NIOLockedValueBox<AlibabaSchedulerState>
    private let fetching = NIOLockedValueBox(false)
    private let wake = PrefetchWakeSignal()
    private let sleep: @Sendable (Duration) async throws -> Void
    private let unixTime: @Sendable () -> Int
    private let logger: Logger
    private let observer: (@Sendable (AlibabaSchedulerSnapshot) -> Void)?

    /// `servers`: the query servers whose set this replaces; their initial set is the bootstrap
    /// list (the IPs `/ss` is asked of). `sleep`: waits for the refresh interval (tests pass a
    /// manual clock's). `observer`: told after every fetch (tests wait on it instead of on time).
    public init(
        settings: Settings,
        servers: ResolverServers,
        transport: CurlTransport,
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await ContinuousClock().sleep(for: $0) },
        unixTime: @escaping @Sendable () -> Int,
        logger: Logger,
        observer: (@Sendable (AlibabaSchedulerSnapshot) -> Void)? = nil
    ) {
        self.settings = settings
        self.servers = servers
        self.transport = transport
        self.state = NIOLockedValueBox(AlibabaSchedulerState(bootstrap: servers.ips))
        self.sleep = sleep
        self.unixTime = unixTime
        self.logger = logger
        self.observer = observer
    }

    /// The service said `service_status: disable`: queries must not go to it.
    public var isDisabled: Bool { state.withLockedValue { $0.disabled } }

    public var snapshot: AlibabaSchedulerSnapshot { state.withLockedValue { $0.snapshot } }

    /// Asks the runner for a fetch soon (coalesced with any pending one); never waits.
    func requestRefresh(_ trigger: AlibabaSchedulerState.Trigger) {
        state.withLockedValue { $0.request(trigger) }
        wake.signal()
    }

    /// One fetch now, waiting for it (the `resolve` command, which runs no services).
    public func refreshNow() async {
        await refresh(.start)
    }

    /// Fetches at start, then whenever the interval passes or a refresh is requested, until
    /// cancelled or the service group shuts down.
    public func run() async throws {
        await cancelWhenGracefulShutdown {
            await self.refresh(.start)
            while !Task.isCancelled {
                await self.waitForWork()
                if Task.isCancelled { break }
                await self.refresh(self.state.withLockedValue { $0.takePending() })
            }
        }
    }

    /// While the service is disabled, `/ss` is asked again at least this often (even with the
    /// periodic refresh off): nothing else would (no query runs, so no rotation fails), and over
    /// plain HTTP a forged `disable` must not switch HTTPDNS off for long.
    static let disabledRecheck: Duration = .seconds(300)

    private func waitForWork() async {
        let configured = settings.refreshInterval
        let interval = !isDisabled ? configured : (configured > .zero ? min(configured, Self.disabledRecheck) : Self.disabledRecheck)
        await withTaskGroup(of: Void.self) { group in
            if interval > .zero {
                group.addTask { try? await self.sleep(interval) }
            }
            group.addTask { await self.wake.wait() }
            await group.next()
            group.cancelAll()
        }
    }

    /// One `/ss` round: the bootstrap IPs in order until one answers usefully. A fetch already
    /// running makes this a no-op.
    func refresh(_ trigger: AlibabaSchedulerState.Trigger) async {
        guard fetching.withLockedValue({ running in
            defer { running = true }
            return !running
        }) else { return }
        defer {
            fetching.withLockedValue { $0 = false }
            observer?(snapshot)
        }

        let bootstrap = state.withLockedValue { $0.bootstrap }
        var lastReason = "no bootstrap IP answered"
        for ip in bootstrap.isEmpty ? [nil] : bootstrap.map(Optional.some) {
            if Task.isCancelled { return }
            switch await fetch(from: ip) {
            case .success(var schedule):
                if !settings.useIPv6ServiceIPs() { schedule.serviceIPs.removeAll { $0.contains(":") } }
                apply(schedule, trigger: trigger, from: ip)
                return
            case .failure(let reason):
                lastReason = reason
                logger.debug("service-IP scheduling: bootstrap IP failed", metadata: ["httpdns.server": "\(ip ?? "-")", "error": "\(reason)"])
            }
        }
        let action = state.withLockedValue { $0.failed(lastReason, trigger: trigger, unixTime: unixTime()) }
        logger.warning("service-IP scheduling failed; querying the bootstrap IPs", metadata: [
            "httpdns.trigger": "\(trigger.rawValue)", "error": "\(lastReason)",
        ])
        if case .use(let ips) = action { servers.replace(with: ips) }
    }

    private func apply(_ schedule: AlibabaServiceSchedule, trigger: AlibabaSchedulerState.Trigger, from ip: String?) {
        let (action, change) = state.withLockedValue { $0.scheduled(schedule, trigger: trigger, unixTime: unixTime()) }
        if case .use(let ips) = action { servers.replace(with: ips) }
        switch change {
        case .disabled:
            logger.error(
                "Alibaba HTTPDNS scheduling says the service is disabled for this account (service_status: disable); not querying it until scheduling enables it again")
        case .enabled:
            logger.notice("Alibaba HTTPDNS scheduling enabled the service again")
        case .none:
            break
        }
        logger.debug("service-IP scheduling answered", metadata: [
            "httpdns.trigger": "\(trigger.rawValue)", "httpdns.server": "\(ip ?? "-")",
            "httpdns.service_ips": "\(schedule.serviceIPs.joined(separator: ","))", "httpdns.disabled": "\(schedule.disabled)",
        ])
    }

    private enum FetchResult {
        case success(AlibabaServiceSchedule)
        case failure(String)
    }

    private func fetch(from ip: String?) async -> FetchResult {
        let signature = settings.secret.map { secret in
            (secret: secret, expiry: unixTime() + 600, nonce: AES128.randomBytes(8).map(Digest.hex) ?? String(unixTime()))
        }
        let path = AlibabaServiceSchedule.path(accountID: settings.accountID, sdkVersion: settings.sdkVersion, signature: signature)
        var request = CurlRequest(url: settings.serviceRoot + path)
        request.timeout = settings.timeout
        request.caFile = settings.caFile
        request.connectAddress = ip
        request.pinnedAddresses = ip.map { [$0] } ?? []
        let response: CurlResponse
        do {
            response = try await transport.send(request)
        } catch let error as CurlTransportError {
            return .failure("\(error)")
        } catch {
            return .failure("cancelled")
        }
        guard response.status == 200 else {
            let code = AlibabaHTTPDNS.errorCode(in: response.body).map { " \($0)" } ?? ""
            return .failure("HTTP \(response.status)\(code)")
        }
        do {
            return .success(try AlibabaServiceSchedule.parse(response.body))
        } catch {
            return .failure(error.description)
        }
    }
}
