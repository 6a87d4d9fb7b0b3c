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

    /// Closes `channels` and waits until each is closed (one already closed counts as closed).
    static func close(_ channels: [any Channel]) async {
        for channel in channels {
            try? await channel.close()
        }
    }
}
