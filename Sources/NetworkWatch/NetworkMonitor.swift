import CNetlink
import Logging
import NIOCore
import NIOPosix
import ProxyKit
import ServiceLifecycle

/// Watches the host's addresses and routes (netlink; interface addresses polled every 10 s where
/// netlink is unavailable) and, when the set of addresses really changed, runs `respond` once per
/// change, in order. A service: it stops at graceful shutdown.
package final class NetworkMonitor: Service, Sendable {
    package struct Configuration: Sendable {
        var machine = NetworkChangeStateMachine.Configuration()
        /// Without netlink: how often the interface addresses are read. Default 10 s.
        package var pollInterval: TimeAmount = .seconds(10)
        /// After the netlink socket failed (e.g. its queue overflowed), when to open a new one. Default 1 s.
        package var reopenDelay: TimeAmount = .seconds(1)

        package init() {}
    }

    /// Where the monitor learns of changes and the addresses (real ones by default; tests pass fakes).
    package struct Sources: Sendable {
        /// A NETLINK_ROUTE socket subscribed to address and route changes, or -errno.
        package var openNetlink: @Sendable () -> Int32
        package var readAddresses: @Sendable () -> InterfaceAddresses

        package init(
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
    package let recorder: NetworkChangeRecorder
    private let respond: @Sendable (NetworkChange) async -> Void

    package init(
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

    package func run() async throws {
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
