import NIOCore
import ProxyAccess

/// Sets up an accepted client connection for forward proxying (the plain listener, and the
/// transparent listener once it has found an HTTP request).
package enum ClientPipeline {
    /// The handlers of an accepted client connection: the request reader (the project's HTTP/1
    /// codec, the read-ahead gate; it keeps bytes after a CONNECT or upgrade head for the tunnel),
    /// and the connection's handler, which serializes responses itself.
    package static func configure(
        _ channel: any Channel, env: ProxyEnvironment, admission: ClientAdmission.Verdict = .admitted,
        transparent: TransparentOrigin? = nil
    ) throws {
        let sync = channel.pipeline.syncOperations
        let requestDecoder = ClientRequestReader()
        let decoder = ByteToMessageHandler(requestDecoder)
        try sync.addHandler(decoder)
        let targets = transparent.map { TransparentRequestTargetHandler(originalPort: $0.originalDestination.port ?? 80, reader: requestDecoder) }
        if let targets { try sync.addHandler(targets) }
        let handler = ClientConnectionHandler(
            env: env,
            pool: env.pool(for: channel.eventLoop),
            requestDecoder: requestDecoder,
            codec: TunnelSwitch.ClientCodec(decoder: decoder, transparentTargets: targets),
            admission: admission
        )
        handler.transparent = transparent
        try sync.addHandler(handler)
    }
}
