import Foundation
import NIOCore
import Testing

@testable import NetworkWatch

/// Debounce, compare, respond: the network monitor's decisions, on instants given by hand.
@Suite struct NetworkChangeStateMachineTests {
    func t(_ milliseconds: Int64) -> NIODeadline { .uptimeNanoseconds(1_000_000_000 + UInt64(milliseconds) * 1_000_000) }

    static let home = addresses([[192, 168, 1, 20], v6("2001:db8:1:2::20")])
    static let office = addresses([[10, 0, 5, 7], v6("2001:db8:99:1::7")])

    @Test func aBurstOfEventsIsReadOnceAfterItGoesQuiet() {
        var machine = NetworkChangeStateMachine(initial: Self.home)
        #expect(machine.eventReceived(now: t(0)) == .armTimer(t(250)))
        #expect(machine.eventReceived(now: t(100)) == .none)
        #expect(machine.eventReceived(now: t(200)) == .none)
        // The timer armed for the first event finds the burst still going: it waits for quiet.
        #expect(machine.timerFired(now: t(250)) == .armTimer(t(450)))
        #expect(machine.timerFired(now: t(450)) == .readAddresses)
        #expect(machine.addressesRead(Self.office) == .respond(NetworkChange(old: Self.home, new: Self.office)))
        // Over: a late timer does nothing, a new event starts a new burst.
        #expect(machine.timerFired(now: t(500)) == .none)
        #expect(machine.eventReceived(now: t(600)) == .armTimer(t(850)))
    }

    @Test func aSteadyTrickleIsReadWithinTheMaximumDelay() {
        var machine = NetworkChangeStateMachine(initial: Self.home)
        _ = machine.eventReceived(now: t(0))
        var now: Int64 = 200
        var action = NetworkChangeStateMachine.Action.none
        while now <= 3000 {
            _ = machine.eventReceived(now: t(now))
            action = machine.timerFired(now: t(now))
            if action == .readAddresses { break }
            now += 200
        }
        #expect(action == .readAddresses)
        #expect(now == 2000, "read at first event + maxDelay")
    }

    @Test func theSameAddressesAreNoChange() {
        var machine = NetworkChangeStateMachine(initial: Self.home)
        _ = machine.eventReceived(now: t(0))
        #expect(machine.timerFired(now: t(250)) == .readAddresses)
        #expect(machine.addressesRead(Self.home) == .none)
        #expect(machine.pollDue() == .readAddresses)
        #expect(machine.addressesRead(Self.home) == .none)
        #expect(machine.current == Self.home)
    }

    @Test func aFlappingInterfaceIsAnsweredAtMostOncePerHoldDown() {
        var machine = NetworkChangeStateMachine(initial: Self.home)
        _ = machine.eventReceived(now: t(0))
        #expect(machine.timerFired(now: t(250)) == .readAddresses)
        #expect(machine.addressesRead(Self.office) == .respond(NetworkChange(old: Self.home, new: Self.office)))
        // It flaps back 300 ms later: the read waits for the 5 s hold-down after the response...
        #expect(machine.eventReceived(now: t(300)) == .armTimer(t(550)))
        #expect(machine.timerFired(now: t(550)) == .armTimer(t(5250)))
        _ = machine.eventReceived(now: t(2000))  // ...and forth again meanwhile
        #expect(machine.timerFired(now: t(5250)) == .readAddresses)
        // one read sees where it ended: back at the office, no change, no response
        #expect(machine.addressesRead(Self.office) == .none)
        // a real change after the hold-down is answered as usual
        _ = machine.eventReceived(now: t(9000))
        #expect(machine.timerFired(now: t(9250)) == .readAddresses)
        #expect(machine.addressesRead(Self.home) == .respond(NetworkChange(old: Self.office, new: Self.home)))
    }

    @Test func aChangeIsReportedOnceAndBecomesTheNewBaseline() {
        var machine = NetworkChangeStateMachine(initial: Self.home)
        let change = NetworkChange(old: Self.home, new: Self.office)
        #expect(machine.addressesRead(Self.office) == .respond(change))
        #expect(change.added == 2 && change.removed == 2)
        #expect(machine.addressesRead(Self.office) == .none)
        #expect(machine.addressesRead(Self.home) == .respond(NetworkChange(old: Self.office, new: Self.home)))
    }

    @Test func loopbackLinkLocalAndPrivacyAddressChurnIsNoChange() {
        var machine = NetworkChangeStateMachine(initial: Self.home)
        // 127.0.0.2 on lo, a link-local v4 and v6, ::1, a multicast group, and a new temporary
        // (privacy) IPv6 address in the same /64: none says the network changed.
        let churned = Self.addresses([
            [192, 168, 1, 20], v6("2001:db8:1:2::20"), v6("2001:db8:1:2:a1b2:c3d4:e5f6:1234"),
            [127, 0, 0, 2], [169, 254, 10, 1], v6("fe80::1"), v6("::1"), v6("ff02::1"), [224, 0, 0, 1],
        ])
        #expect(churned == Self.home)
        #expect(machine.addressesRead(churned) == .none)
        // A different /64 is another network.
        let moved = Self.addresses([[192, 168, 1, 20], v6("2001:db8:1:3::20")])
        #expect(machine.addressesRead(moved) == .respond(NetworkChange(old: Self.home, new: moved)))
    }

    @Test func addressKeys() {
        #expect(InterfaceAddresses.key([10, 1, 2, 3]) == "10.1.2.3")
        #expect(InterfaceAddresses.key(v6("2001:db8:1:2::20")) == "2001:db8:1:2::/64")
        #expect(InterfaceAddresses.key(v6("::ffff:10.1.2.3")) == "10.1.2.3")
        #expect(InterfaceAddresses.key([0, 0, 0, 0]) == nil)
        #expect(InterfaceAddresses.key([1, 2, 3]) == nil)
        let counted = Self.addresses([[10, 1, 2, 3], v6("2001:db8:1:2::1"), v6("2001:db8:1:2::2"), v6("fd00:1::1")])
        #expect(counted.ipv4Count == 1 && counted.ipv6Count == 2)
    }

    static func addresses(_ list: [[UInt8]]) -> InterfaceAddresses {
        var result = InterfaceAddresses()
        for bytes in list { result.add(bytes) }
        return result
    }
}

/// 16 bytes of an IPv6 literal (test input only: full or `::`-compressed hex groups, or a
/// trailing dotted IPv4).
func v6(_ text: String) -> [UInt8] {
    var tail = text
    var v4: [UInt8] = []
    if let lastColon = text.lastIndex(of: ":"), text[lastColon...].contains(".") {
        v4 = text[text.index(after: lastColon)...].split(separator: ".").map { UInt8($0)! }
        tail = String(text[...lastColon]) + "0:0"
    }
    let halves = tail.components(separatedBy: "::")
    let head = halves[0].split(separator: ":").map { UInt16($0, radix: 16)! }
    let rest = halves.count > 1 ? halves[1].split(separator: ":").map { UInt16($0, radix: 16)! } : []
    let groups = head + Array(repeating: 0, count: 8 - head.count - rest.count) + rest
    var bytes = groups.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    if !v4.isEmpty { bytes.replaceSubrange(12..<16, with: v4) }
    return bytes
}
