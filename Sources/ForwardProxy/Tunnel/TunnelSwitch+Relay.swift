import NIOCore
import ProxyKit

extension TunnelSwitch {
    /// For a connection that spoke no HTTP (a transparent relay, a SOCKS CONNECT): the handler at
    /// `context`, the pipeline's only one, gives way to the tunnel to `upstream`. `clientBytes`
    /// (read before the decision) go to the origin first; the tunnel is counted while open and
    /// `record` is finished when it ends. Both sides read again afterwards; if the glue cannot be
    /// installed, both are closed.
    package static func relay(
        from context: ChannelHandlerContext, to upstream: any Channel, clientBytes: ByteBuffer?,
        record: AccessLogRecord, started: NIODeadline, env: ProxyEnvironment
    ) {
        let recorder = TunnelRecorder(record: record, started: started) { record in
            env.metrics?.tunnels.decrement()
            env.traffic.tunnelClosed()
            env.finished(record)
        }
        do {
            try install(
                clientHandlerContext: context, upstream: upstream, clientBytes: clientBytes.map { [NIOAny($0)] } ?? [],
                upstreamBytes: [], recorder: recorder, idleTimeout: env.configuration.tunnelIdleTimeout
            )
        } catch {
            upstream.close(promise: nil)
            context.close(promise: nil)
            return
        }
        env.metrics?.tunnels.increment()
        env.traffic.tunnelOpened()
        let client = context.channel
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        _ = client.setOption(ChannelOptions.autoRead, value: true)
        upstream.read()
    }
}
