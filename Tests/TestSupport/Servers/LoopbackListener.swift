import NIOCore
import NIOPosix

/// Binding a test server's listener: every server of this target starts through here.
enum LoopbackListener {
    /// Binds `bootstrap` on `host` and `port` (0: any free port); the listening channel and its port.
    static func bind(_ bootstrap: ServerBootstrap, host: String, port: Int) async throws -> (channel: any Channel, port: Int) {
        let channel = try await bootstrap
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: host, port: port)
            .get()
        guard let bound = channel.localAddress?.port else {
            try? await channel.close()
            throw TestOriginError.noPort
        }
        return (channel, bound)
    }

    /// "HOST:PORT", the host bracketed when it is an IPv6 address ("[::1]:PORT").
    static func authority(host: String, port: Int) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}

/// A test server started with `start() async`: `stop()` for `defer`, `shutdown()` when the test
/// needs the server gone before it goes on.
package protocol TestServer: AnyObject, Sendable {
    /// The listening socket(s).
    var listeners: [any Channel] { get }
    /// The accepted connections, where the server keeps them (closed after the listeners, so
    /// that none accepted meanwhile is left open).
    var accepted: [any Channel] { get }
}

extension TestServer {
    package var accepted: [any Channel] { [] }

    /// Starts closing the listeners, then the connections, and returns at once (for `defer`,
    /// which cannot await).
    package func stop() {
        for channel in listeners { channel.close(promise: nil) }
        for channel in accepted { channel.close(promise: nil) }
    }

    /// Closes the listeners, then the connections, and returns once they are closed: a
    /// connection to the port is refused afterwards.
    package func shutdown() async {
        for channel in listeners { try? await channel.close() }
        for channel in accepted { try? await channel.close() }
    }
}
