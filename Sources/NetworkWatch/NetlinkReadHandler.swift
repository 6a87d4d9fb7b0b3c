import NIOCore

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
