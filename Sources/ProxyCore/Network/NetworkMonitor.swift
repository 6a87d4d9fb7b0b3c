import CNetlink
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

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
