import CNetlink
import Logging
import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

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
