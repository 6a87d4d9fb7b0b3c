import Testing

@testable import NetworkWatch

/// The netlink datagram walk: finds address and route messages, never reads past the buffer.
@Suite struct NetlinkSummaryTests {
    /// One `nlmsghdr` (host byte order) of `type` with `payload` bytes, padded to 4.
    static func message(type: UInt16, payload: Int = 8, length: UInt32? = nil) -> [UInt8] {
        var bytes: [UInt8] = []
        let total = UInt32(16 + payload)
        withUnsafeBytes(of: length ?? total) { bytes += $0 }
        withUnsafeBytes(of: type) { bytes += $0 }
        bytes += [0, 0]  // flags
        bytes += [UInt8](repeating: 0, count: 8)  // sequence, port id
        bytes += [UInt8](repeating: 0xAB, count: payload)
        while bytes.count % 4 != 0 { bytes.append(0) }
        return bytes
    }

    @Test func addressAndRouteMessagesCount() {
        let datagram = Self.message(type: 20) + Self.message(type: 21, payload: 5) + Self.message(type: 24) + Self.message(type: 25)
        let summary = NetlinkSummary(parsing: datagram)
        #expect(summary == NetlinkSummary(changes: 4, lost: false))
        #expect(summary.isRelevant)
    }

    @Test func otherMessagesAreNotRelevant() {
        // NLMSG_NOOP, NLMSG_DONE, RTM_NEWLINK.
        let summary = NetlinkSummary(parsing: Self.message(type: 1) + Self.message(type: 3) + Self.message(type: 16))
        #expect(summary == NetlinkSummary(changes: 0, lost: false))
        #expect(!summary.isRelevant)
        #expect(!NetlinkSummary(parsing: [UInt8]()).isRelevant)
    }

    @Test func anOverrunMeansMessagesWereLost() {
        #expect(NetlinkSummary(parsing: Self.message(type: 4)).isRelevant)
    }

    @Test(arguments: [
        Array(message(type: 20).prefix(10)),  // shorter than a header
        message(type: 20, length: 4096),  // runs past the datagram
        message(type: 20, length: 3),  // shorter than its own header: would never advance
        message(type: 16) + message(type: 20, length: 0),
    ])
    func truncatedOrBogusLengthsStopTheWalkAndCountAsLost(datagram: [UInt8]) {
        let summary = NetlinkSummary(parsing: datagram)
        #expect(summary.lost)
        #expect(summary.isRelevant)
    }

    @Test func theWalkIsBounded() {
        let many = Array((0..<5000).map { _ in Self.message(type: 3, payload: 0) }.joined())
        #expect(NetlinkSummary(parsing: many) == NetlinkSummary(changes: 0, lost: false))
        let slice = (Self.message(type: 1) + Self.message(type: 20))[4...]
        // A slice not starting at 0 (as a ByteBuffer view may be): the first bytes are garbage.
        _ = NetlinkSummary(parsing: slice)
    }
}
