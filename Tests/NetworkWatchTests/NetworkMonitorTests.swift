#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ServiceLifecycle
import Testing

@testable import NetworkWatch

/// The monitor's event-loop side with fake sources: a datagram socket pair stands in for netlink
/// (the test writes netlink messages into it), the addresses come from a box the test sets.
@Suite(.timeLimit(.minutes(1))) struct NetworkMonitorTests {
    final class FakeHost: Sendable {
        let addresses = NIOLockedValueBox(NetworkChangeStateMachineTests.home)
        let reads = NIOLockedValueBox(0)
        let changes = NIOLockedValueBox<[NetworkChange]>([])
        let signal = AsyncStream.makeStream(of: Void.self)

        var sources: NetworkMonitor.Sources {
            .init(openNetlink: { -ENOSYS }, readAddresses: { [self] in
                reads.withLockedValue { $0 += 1 }
                return addresses.withLockedValue { $0 }
            })
        }

        func respond(_ change: NetworkChange) {
            changes.withLockedValue { $0.append(change) }
            signal.continuation.yield()
        }
    }

    /// No debounce wait, so nothing here waits for time to pass.
    static func configuration(poll: TimeAmount = .hours(1)) -> NetworkMonitor.Configuration {
        var configuration = NetworkMonitor.Configuration()
        configuration.machine = .init(debounce: .zero, maxDelay: .zero)
        configuration.pollInterval = poll
        return configuration
    }

    /// Runs `monitor` in a service group while `body` runs, then shuts it down.
    static func running(_ monitor: NetworkMonitor, _ body: () async throws -> Void) async throws {
        let group = ServiceGroup(services: [monitor], logger: Logger(label: "test"))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            try await body()
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }

    @Test func aNetlinkMessageLeadsToACheckAndOnlyARealChangeToAResponse() async throws {
        var pair: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0, &pair) == 0)
        let (monitorEnd, testEnd) = (pair[0], pair[1])
        defer { close(testEnd) }
        let host = FakeHost()
        var sources = host.sources
        sources.openNetlink = { monitorEnd }
        let recorder = NetworkChangeRecorder()
        let monitor = NetworkMonitor(
            eventLoop: MultiThreadedEventLoopGroup.singleton.next(), recorder: recorder, logger: Logger(label: "test"),
            configuration: Self.configuration(), sources: sources
        ) { host.respond($0) }
        var signals = host.signal.stream.makeAsyncIterator()

        try await Self.running(monitor) {
            await waitFor("netlink mode") { recorder.snapshot.monitor == "netlink" }
            // Addresses unchanged: read, no response.
            Self.deliver(NetlinkSummaryTests.message(type: 20), to: testEnd)
            await waitFor("a read") { host.reads.withLockedValue { $0 } >= 2 }
            // A message that says nothing about addresses or routes: not even a read.
            Self.deliver(NetlinkSummaryTests.message(type: 16), to: testEnd)
            host.addresses.withLockedValue { $0 = NetworkChangeStateMachineTests.office }
            Self.deliver(NetlinkSummaryTests.message(type: 21), to: testEnd)
            _ = await signals.next()
        }
        #expect(host.changes.withLockedValue { $0 } == [
            NetworkChange(old: NetworkChangeStateMachineTests.home, new: NetworkChangeStateMachineTests.office)
        ])
        #expect(host.reads.withLockedValue { $0 } == 3, "initial, unchanged, changed")
        let stats = recorder.snapshot
        #expect(stats.changes == 1)
        #expect(stats.lastChange != nil)
        #expect(stats.ipv4Addresses == 1 && stats.ipv6Prefixes == 1)
    }

    @Test func withoutNetlinkTheAddressesArePolled() async throws {
        let host = FakeHost()
        let recorder = NetworkChangeRecorder()
        let monitor = NetworkMonitor(
            eventLoop: MultiThreadedEventLoopGroup.singleton.next(), recorder: recorder, logger: Logger(label: "test"),
            configuration: Self.configuration(poll: .milliseconds(5)), sources: host.sources
        ) { host.respond($0) }
        var signals = host.signal.stream.makeAsyncIterator()
        try await Self.running(monitor) {
            await waitFor("polling mode") { recorder.snapshot.monitor == "polling" }
            await waitFor("a few polls") { host.reads.withLockedValue { $0 } >= 3 }
            #expect(host.changes.withLockedValue { $0 }.isEmpty)
            host.addresses.withLockedValue { $0 = NetworkChangeStateMachineTests.office }
            _ = await signals.next()
        }
        #expect(host.changes.withLockedValue { $0.count } == 1)
        #expect(recorder.snapshot.changes == 1)
    }

    static func deliver(_ bytes: [UInt8], to fd: Int32) {
        let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, 0) }
        #expect(sent == bytes.count)
    }
}

/// Waits (yielding, then briefly parking) until `condition` holds; fails the test after 10 s.
func waitFor(_ what: Comment, sourceLocation: SourceLocation = #_sourceLocation, _ condition: () -> Bool) async {
    let deadline = ContinuousClock.now + .seconds(10)
    while ContinuousClock.now < deadline {
        if condition() { return }
        try? await Task.sleep(for: .milliseconds(2))
    }
    Issue.record("timed out waiting: \(what)", sourceLocation: sourceLocation)
}
