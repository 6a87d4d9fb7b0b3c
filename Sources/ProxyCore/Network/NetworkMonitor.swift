import CNetlink
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Watches the host's addresses and routes (netlink; interface addresses polled every 10 s where
/// netlink is unavailable) and, when the set of addresses really changed, runs `respond` once per
/// change, in order. A service: it stops at graceful shutdown.
public final class NetworkMonitor: Service, Sendable {
    public struct Configuration: Sendable {
        var machine = NetworkChangeStateMachine.Configuration()
        /// Without netlink: how often the interface addresses are read. Default 10 s.
        public var pollInterval: TimeAmount = .seconds(10)
        /// After the netlink socket failed (e.g. its queue overflowed), when to open a new one. Default 1 s.
        public var reopenDelay: TimeAmount = .seconds(1)

        public init() {}
    }

    /// Where the monitor learns of changes and the addresses (real ones by default; tests pass fakes).
    public struct Sources: Sendable {
        /// A NETLINK_ROUTE socket subscribed to address and route changes, or -errno.
        public var openNetlink: @Sendable () -> Int32
        public var readAddresses: @Sendable () -> InterfaceAddresses

        public init(
            openNetlink: @escaping @Sendable () -> Int32 = { cnetlink_open_route_monitor() },
            readAddresses: @escaping @Sendable () -> InterfaceAddresses = { InterfaceAddresses.current() }
        ) {
            self.openNetlink = openNetlink
            self.readAddresses = readAddresses
        }
    }

    private let eventLoop: any EventLoop
    private let configuration: Configuration
    private let sources: Sources
    private let logger: Logger
    public let recorder: NetworkChangeRecorder
    private let respond: @Sendable (NetworkChange) async -> Void

    public init(
        eventLoop: any EventLoop,
        recorder: NetworkChangeRecorder,
        logger: Logger,
        configuration: Configuration = .init(),
        sources: Sources = .init(),
        respond: @escaping @Sendable (NetworkChange) async -> Void
    ) {
        self.eventLoop = eventLoop
        self.recorder = recorder
        self.logger = logger
        self.configuration = configuration
        self.sources = sources
        self.respond = respond
    }

    public func run() async throws {
        // Changes seen while an earlier one is still being answered queue up (a few at most: each
        // answer resets everything anyway).
        let (changes, sink) = AsyncStream.makeStream(of: NetworkChange.self, bufferingPolicy: .bufferingNewest(4))
        let recorder = self.recorder
        let (configuration, sources, logger, eventLoop) = (self.configuration, self.sources, self.logger, self.eventLoop)
        let watcher = try await eventLoop.submit {
            let watcher = NetworkWatcher(
                eventLoop: eventLoop, configuration: configuration, sources: sources, logger: logger, recorder: recorder
            ) { change in
                recorder.changed(change)
                sink.yield(change)
            }
            watcher.start()
            return NIOLoopBound(watcher, eventLoop: eventLoop)
        }.get()
        await cancelWhenGracefulShutdown {
            for await change in changes {
                await self.respond(change)
            }
        }
        sink.finish()
        try? await eventLoop.submit { watcher.value.stop() }.get()
    }
}

/// The event-loop side of `NetworkMonitor`: owns the netlink channel (or the poll timer) and the
/// state machine, and runs its actions. Confined to `eventLoop`.
final class NetworkWatcher {
    private let eventLoop: any EventLoop
    private let configuration: NetworkMonitor.Configuration
    private let sources: NetworkMonitor.Sources
    private let logger: Logger
    private let recorder: NetworkChangeRecorder
    private let onChange: (NetworkChange) -> Void
    private var machine: NetworkChangeStateMachine
    private var timer: Scheduled<Void>?
    private var poll: RepeatedTask?
    private var channel: (any Channel)?
    private var stopped = false

    init(
        eventLoop: any EventLoop, configuration: NetworkMonitor.Configuration, sources: NetworkMonitor.Sources, logger: Logger,
        recorder: NetworkChangeRecorder, onChange: @escaping (NetworkChange) -> Void
    ) {
        self.eventLoop = eventLoop
        self.configuration = configuration
        self.sources = sources
        self.logger = logger
        self.recorder = recorder
        self.onChange = onChange
        self.machine = NetworkChangeStateMachine(initial: sources.readAddresses(), configuration: configuration.machine)
    }

    func start() {
        let fd = sources.openNetlink()
        guard fd >= 0 else {
            startPolling(reason: String(cString: strerror(-fd)))
            return
        }
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        NIOPipeBootstrap(group: eventLoop)
            .channelOption(ChannelOptions.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 64 * 1024))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NetlinkReadHandler(watcher: bound.value))
                }
            }
            .takingOwnershipOfDescriptor(input: fd)
            .whenComplete { result in
                let watcher = bound.value
                switch result {
                case .success(let channel):
                    guard !watcher.stopped else {
                        channel.close(promise: nil)
                        return
                    }
                    watcher.channel = channel
                    watcher.recorder.started(mode: "netlink", addresses: watcher.machine.current)
                    watcher.logger.debug("network monitor: watching address and route changes (netlink)")
                    channel.closeFuture.whenComplete { _ in bound.value.netlinkClosed() }
                case .failure(let error):
                    // NIO did not take the descriptor.
                    close(fd)
                    watcher.startPolling(reason: "\(error)")
                }
            }
    }

    func stop() {
        stopped = true
        timer?.cancel()
        poll?.cancel()
        channel?.close(promise: nil)
    }

    /// A netlink message about addresses or routes (or a sign that some were lost).
    func event() {
        run(machine.eventReceived(now: .now()))
    }

    /// The socket closed under us (a read error such as an overflowed queue): events may be lost,
    /// so look now and listen again shortly.
    private func netlinkClosed() {
        channel = nil
        guard !stopped else { return }
        logger.debug("network monitor: netlink socket closed; reopening")
        event()
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        eventLoop.scheduleTask(in: configuration.reopenDelay) {
            let watcher = bound.value
            if !watcher.stopped { watcher.start() }
        }
    }

    private func startPolling(reason: String) {
        guard !stopped, poll == nil else { return }
        logger.notice(
            "network monitor: netlink unavailable; reading interface addresses periodically",
            metadata: ["error": "\(reason)", "network.poll_interval_s": "\(configuration.pollInterval.nanoseconds / 1_000_000_000)"])
        recorder.started(mode: "polling", addresses: machine.current)
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        poll = eventLoop.scheduleRepeatedTask(initialDelay: configuration.pollInterval, delay: configuration.pollInterval) { _ in
            let watcher = bound.value
            watcher.run(watcher.machine.pollDue())
        }
    }

    private func run(_ action: NetworkChangeStateMachine.Action) {
        guard !stopped else { return }
        switch action {
        case .none:
            break
        case .armTimer(let deadline):
            timer?.cancel()
            let bound = NIOLoopBound(self, eventLoop: eventLoop)
            timer = eventLoop.scheduleTask(deadline: deadline) {
                let watcher = bound.value
                watcher.run(watcher.machine.timerFired(now: .now()))
            }
        case .readAddresses:
            run(machine.addressesRead(sources.readAddresses()))
        case .respond(let change):
            onChange(change)
        }
    }
}

/// Reads the netlink socket: every datagram is summarised, and one about addresses or routes
/// wakes the watcher. The bytes are not kept.
final class NetlinkReadHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    private let watcher: NetworkWatcher

    init(watcher: NetworkWatcher) {
        self.watcher = watcher
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        let summary = NetlinkSummary(parsing: buffer.readableBytesView)
        if summary.isRelevant { watcher.event() }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A read error closes the channel; the watcher reopens it.
        context.close(promise: nil)
    }
}

@available(*, unavailable)
extension NetlinkReadHandler: Sendable {}
