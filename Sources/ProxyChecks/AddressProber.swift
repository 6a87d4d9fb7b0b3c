import HTTPDNS
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ProxyConfig
import ProxyKit
import ProxyUpstream
import ServiceLifecycle

/// `--probe-domains` (the SDKs' IP ranking): after each new HTTPDNS answer for a listed name, at
/// most once per TTL (at least once a minute), TCP-connects to each of its addresses on the
/// name's probe port and teaches the health table what it saw — the connect time of live
/// addresses, refused or timed-out ones as failures — so that even the first real connection
/// goes to the fastest live address. Addresses the destination policy denies are not probed.
package final class AddressProber: BackgroundCheck {
    /// One TCP connect with a timeout: its connect time, or why it failed.
    typealias Dial = @Sendable (SocketAddress, TimeAmount) async -> DialResult

    enum DialResult: Sendable, Equatable {
        case connected(TimeAmount)
        case failed(UpstreamFailureKind)
    }

    struct Settings: Sendable {
        var policy: DestinationPolicy
        var timeout: TimeAmount
    }

    /// Names queued at most (more are dropped until the queue drains).
    static let queueCapacity = 64
    /// Connects in flight at once.
    static let maxConcurrent = 8

    /// Probe ports by name (a name listed with several ports is probed on each).
    private let ports: [String: [Int]]
    private let queue: NIOLockedValueBox<RecheckQueue<[String], ContinuousClock.Instant>>
    private let health: IPHealthRegistry
    private let settings: @Sendable () -> Settings
    private let dial: Dial
    private let metrics: BackgroundCheckMetrics?
    private let logger: Logger
    private let worker = BackgroundCheckWorker(clock: ContinuousClock())

    init(
        targets: [ProbeTarget], health: IPHealthRegistry, settings: @escaping @Sendable () -> Settings, dial: @escaping Dial,
        metrics: BackgroundCheckMetrics?, logger: Logger
    ) {
        var ports: [String: [Int]] = [:]
        for target in targets where !(ports[target.host]?.contains(target.port) ?? false) {
            ports[target.host, default: []].append(target.port)
        }
        self.ports = ports
        self.queue = NIOLockedValueBox(RecheckQueue(capacity: Self.queueCapacity, minInterval: .seconds(60)))
        self.health = health
        self.settings = settings
        self.dial = dial
        self.metrics = metrics
        self.logger = logger
    }

    package func networkDidChange() {
        queue.withLockedValue { $0.forgetSchedule() }
    }

    /// Queues `answer`'s addresses for probing when `host` is a probe domain that is due.
    package func offer(host: String, answer: ResolvedAnswer) {
        offer(host: host, addresses: answer.ipv6 + answer.ipv4, ttl: answer.ttl, now: .now)
    }

    @discardableResult
    func offer(host: String, addresses: [String], ttl: Duration, now: ContinuousClock.Instant) -> Bool {
        guard ports[host] != nil, !addresses.isEmpty else { return false }
        let offer = queue.withLockedValue { $0.offer(host, job: addresses, interval: ttl, now: now) }
        guard offer == .queued else { return false }
        worker.wakeUp()
        return true
    }

    package func run() async throws {
        await worker.run { _ in
            self.queue.withLockedValue { $0.next() }.map { .run($0) } ?? .idle
        } perform: { (host: String, addresses: [String]) in
            await self.probe(host: host, addresses: addresses)
        }
    }

    /// Probes `addresses` of `host` (at most `maxConcurrent` at once) and records each result.
    func probe(host: String, addresses: [String]) async {
        guard let ports = ports[host] else { return }
        let settings = self.settings()
        let targets = ports.flatMap { port in addresses.compactMap { try? SocketAddress(ipAddress: $0, port: port) } }
            .filter { settings.policy.denialReason(for: $0) == nil }
        await withTaskGroup(of: Void.self) { group in
            var inFlight = 0
            for address in targets {
                // Shutdown: no new dials (a started connect cannot be cancelled; it ends by its timeout).
                if Task.isCancelled { break }
                if inFlight == Self.maxConcurrent {
                    await group.next()
                    inFlight -= 1
                    if Task.isCancelled { break }
                }
                inFlight += 1
                group.addTask { await self.probeOne(address, timeout: settings.timeout, host: host) }
            }
        }
    }

    private func probeOne(_ address: SocketAddress, timeout: TimeAmount, host: String) async {
        guard let endpoint = UpstreamEndpoint(address) else { return }
        switch await dial(address, timeout) {
        case .connected(let connectTime):
            health.recordSuccess(endpoint, connectTime: connectTime)
            metrics?.probed(nil)
            logger.debug("probe connected", metadata: ["proxy.host": "\(host)", "upstream.ip": "\(endpoint)", "connect_ms": "\(connectTime.nanoseconds / 1_000_000)"])
        case .failed(let kind):
            health.recordFailure(endpoint, kind: kind)
            metrics?.probed(kind)
            logger.debug("probe failed", metadata: ["proxy.host": "\(host)", "upstream.ip": "\(endpoint)", "error.kind": "\(kind.rawValue)"])
        }
    }

    /// A plain TCP connect on `group`, closed at once.
    static func tcpDial(group: any EventLoopGroup) -> Dial {
        { address, timeout in
            let started = NIODeadline.now()
            do {
                let channel = try await ClientBootstrap(group: group).connectTimeout(timeout).connect(to: address).get()
                let connectTime = NIODeadline.now() - started
                try? await channel.close()
                return .connected(connectTime)
            } catch {
                return .failed(UpstreamFailureKind(connectError: error) ?? .other)
            }
        }
    }
}

extension AddressProber {
    /// Probes for `targets` over `connector`'s current policy and connect timeout, into `health`.
    package convenience init(
        targets: [ProbeTarget], connector: UpstreamConnector, health: IPHealthRegistry, group: any EventLoopGroup,
        metrics: BackgroundCheckMetrics?, logger: Logger
    ) {
        self.init(
            targets: targets, health: health,
            settings: { Settings(policy: connector.policy, timeout: connector.connectTimeout) },
            dial: Self.tcpDial(group: group), metrics: metrics, logger: logger
        )
    }
}
