import NIOCore
import ProxyAccess
import ProxyHTTP
import ProxyKit
import ProxyUpstream

/// What `ClientConnectionHandler` must do after an event, as decided by
/// `ClientConnectionStateMachine`: every event returns one. The handler runs actions; it makes no
/// decisions and asks the machine nothing.
struct ClientConnectionAction {
    /// What reading the client needs after the effect, besides it.
    struct Then: OptionSet {
        let rawValue: UInt8

        /// Read the client now: NIO asked while reading was not allowed, and now it is.
        static let read = Then(rawValue: 1 << 0)
        /// The queue of pipelined requests is at its read-ahead mark: the decoder stops parsing.
        static let holdDecoder = Then(rawValue: 1 << 1)
        /// The queue has room: the decoder parses what it kept.
        static let releaseDecoder = Then(rawValue: 1 << 2)
        /// Serve the requests read ahead: call `serveQueued` (again) once this action has run.
        static let serveQueue = Then(rawValue: 1 << 3)
    }

    /// What becomes of the upstream connection when an exchange ends.
    enum UpstreamDisposal {
        /// Nothing attached.
        case none
        /// Back to the pool: the response ended cleanly and the origin keeps the connection open.
        case release
        case close
    }

    /// What the connection does once an exchange is over.
    enum AfterExchange {
        /// Wait for the next request (the pipelined ones are served through `serveQueue`); the idle
        /// timer runs until `idleDeadline`.
        case next(idleDeadline: NIODeadline)
        /// Close once the response's last bytes are written.
        case closeAfterLastWrite
    }

    enum Effect {
        case none
        /// Make sure the connection's single timer fires no later than this.
        case scheduleTimer(NIODeadline)
        /// Find an upstream for the current exchange: the pool first, else a dial through the connector.
        case connectUpstream(UpstreamRoute)
        /// The dial for the current exchange completed and is still wanted: attach the connection
        /// it made (the handler closes one no action takes).
        case attachDialedUpstream
        /// A connection was just attached: let it be read (`upstreamReads`) or not, send the head
        /// and every buffered part (bodies and the end, never a head), flush.
        case sendRequest(RequestHead, buffered: [RequestPart], upstreamReads: Bool, timer: NIODeadline?)
        /// Forward a request part upstream (flushing after the end).
        case writeUpstream(RequestPart, timer: NIODeadline?)
        /// Let the exchange's upstream be read, or stop reading it (the client's writability).
        case upstreamReads(allowed: Bool)
        /// Write a response part to the client.
        case writeClient(ResponsePart, timer: NIODeadline?)
        /// The response's end: write it, flush, dispose of the upstream, log, then go on.
        case finishExchange(trailers: HeaderFields?, upstream: UpstreamDisposal, log: AccessLogRecord?, then: AfterExchange)
        /// Answer with an error (its head and body built by the machine), log it, close after the write.
        case respondWithError(ErrorAnswer, record: AccessLogRecord, closeUpstream: Bool)
        /// Check Basic proxy credentials with `authenticator`, the one of the request's settings
        /// (cached, or hashed off the event loop); the verdict comes back through `credentialsChecked`.
        case authenticate(ProxyCredentials, by: ProxyAuthenticator)
        /// Answer 407 with the challenge, log it; close after the write unless `keepAlive`.
        case refuseCredentials(ErrorAnswer, record: AccessLogRecord, keepAlive: Bool)
        /// Answer with the proxy's own response, log it, close after the write.
        case respondLocally(ProxyAnswer, record: AccessLogRecord)
        /// Close the client connection now (and the upstream with it), logging `log` if set.
        case close(closeUpstream: Bool, log: AccessLogRecord?)
        /// Close once the last response's bytes are on the wire.
        case closeAfterLastWrite
        /// The upstream connection closed before answering: note `blamed` as failing (when the
        /// address is at fault), then dial again with it tried last (a fresh connection, not the pool).
        case retryUpstream(UpstreamRoute, blamed: FailedAddress?)
        /// The upstream failed: note `blamed` as failing, then run `then`.
        indirect case upstreamFailed(blamed: FailedAddress, then: Effect)
        /// Dial a CONNECT target (plain TCP); the result comes back through `tunnelConnected` or
        /// `tunnelConnectFailed`.
        case connectTunnel(RequestTarget)
        /// Start the switch to a tunnel: from now on the client's reads are raw bytes (`TunnelEvent.rawBytes`).
        /// For an upgrade the origin's 101 goes out first; for CONNECT the dialed connection (the
        /// one `tunnelConnected` reported) becomes the tunnel's upstream. The HTTP decoders are
        /// removed and the machine hears back through `TunnelEvent.handlersRemoved`.
        case beginTunnelSwitch(upgradeHead: ResponseHead?)
        /// Glue the two channels, replay `clientBytes` towards the origin (after the proxy's own 200
        /// when `sayEstablished`); the tunnel closes after `idleTimeout` without traffic. The
        /// machine hears back through `TunnelEvent.installed`/`.installFailed`.
        case installTunnel(record: AccessLogRecord, started: NIODeadline, clientBytes: HeldBytes, sayEstablished: Bool, idleTimeout: TimeAmount)
    }

    var effect: Effect
    var then: Then

    init(_ effect: consuming Effect, then: Then = []) {
        self.effect = effect
        self.then = then
    }
}

extension ClientConnectionAction.Effect {
    /// `effect`, after noting `blamed` (when known) as failing.
    static func blaming(_ blamed: FailedAddress?, then effect: consuming Self) -> Self {
        guard let blamed else { return effect }
        return .upstreamFailed(blamed: blamed, then: effect)
    }
}

/// An answer the proxy gives itself: head and body as they go out.
struct ProxyAnswer {
    var head: ResponseHead
    var body: String
}

/// An error answer: the error, and the response that says it.
struct ErrorAnswer {
    let error: ProxyError
    var head: ResponseHead
    var body: String
}

/// Raw client bytes held for a tunnel while the HTTP handlers are removed.
struct HeldBytes {
    var parts: [NIOAny] = []
}
