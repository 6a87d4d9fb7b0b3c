import NIOCore
import ProxyKit

/// How the records of a transparent connection's HTTP requests are told apart.
package struct TransparentOrigin: Sendable {
    package var originalDestination: SocketAddress
    /// How the destination name was found (`TransparentStats.Peek`'s label).
    package var peek: String
    package var hijack: Bool

    package init(originalDestination: SocketAddress, peek: String, hijack: Bool) {
        self.originalDestination = originalDestination
        self.peek = peek
        self.hijack = hijack
    }

    func tag(_ record: inout AccessLogRecord) {
        record.kind = .transparent
        record.originalDestination = originalDestination.endpointText
        record.peek = peek
        record.hijack = hijack
    }
}
