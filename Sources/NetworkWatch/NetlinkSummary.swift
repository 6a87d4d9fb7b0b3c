/// What one datagram from the netlink route socket says, read just far enough to know whether it
/// concerns addresses or routes. The kernel is the only sender, but the walk is bounded all the
/// same: a length field that runs past the buffer, or is shorter than a header, ends it.
struct NetlinkSummary: Equatable, Sendable {
    /// Address or route messages (new or deleted) in the datagram.
    var changes = 0
    /// The kernel dropped messages (overrun), or the datagram ended inside a message: something
    /// may have changed that we did not see.
    var lost = false

    /// Worth a look at the interface addresses.
    var isRelevant: Bool { changes > 0 || lost }

    // Linux ABI values (linux/netlink.h, linux/rtnetlink.h): stable, and spelt out here so the
    // parser is tested on any platform.
    static let headerSize = 16
    static let overrun: UInt16 = 4  // NLMSG_OVERRUN
    static let relevantTypes: Set<UInt16> = [
        20, 21,  // RTM_NEWADDR, RTM_DELADDR
        24, 25,  // RTM_NEWROUTE, RTM_DELROUTE
    ]
    /// Messages looked at per datagram at most.
    static let maxMessages = 1024
}

extension NetlinkSummary {
    /// Walks the `nlmsghdr`s in `bytes` (host byte order, each padded to 4 bytes).
    init<Bytes: RandomAccessCollection>(parsing bytes: Bytes) where Bytes.Element == UInt8, Bytes.Index == Int {
        var offset = bytes.startIndex
        var seen = 0
        while offset < bytes.endIndex, seen < Self.maxMessages {
            guard bytes.endIndex - offset >= Self.headerSize else {
                lost = true
                return
            }
            let length = Int(Self.uint32(bytes, at: offset))
            let type = Self.uint16(bytes, at: offset + 4)
            guard length >= Self.headerSize, length <= bytes.endIndex - offset else {
                lost = true
                return
            }
            if Self.relevantTypes.contains(type) { changes += 1 }
            if type == Self.overrun { lost = true }
            seen += 1
            let padded = (length + 3) & ~3
            offset += min(padded, bytes.endIndex - offset)
        }
    }

    private static func uint32<Bytes: RandomAccessCollection>(_ bytes: Bytes, at offset: Int) -> UInt32
    where Bytes.Element == UInt8, Bytes.Index == Int {
        var value: UInt32 = 0
        for index in 0..<4 { value |= UInt32(bytes[offset + index]) << (8 * UInt32(index)) }
        return UInt32(littleEndian: value)
    }

    private static func uint16<Bytes: RandomAccessCollection>(_ bytes: Bytes, at offset: Int) -> UInt16
    where Bytes.Element == UInt8, Bytes.Index == Int {
        UInt16(littleEndian: UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8)
    }
}
