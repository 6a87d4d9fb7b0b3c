import NIOCore
import NIOHTTP1
import ProxyAccess
import ProxyHTTP
import ProxyKit
import ProxyUpstream

/// What `ClientConnectionHandler` must do after an event, as decided by
/// `ClientConnectionStateMachine`. The handler runs actions; it makes no decisions.
enum ClientConnectionAction: Equatable {
    /// What becomes of the upstream connection when an exchange ends.
    enum UpstreamDisposal: Equatable {
        /// Nothing attached.
        case none
        /// Back to the pool: the response ended cleanly and the origin keeps the connection open.
        case release
        case close
    }

    /// What the connection does once an exchange is over.
    enum AfterExchange: Equatable {
        /// Serve the next request (pipelined parts first); the idle timer runs until `deadline`.
        case next(idleDeadline: NIODeadline)
        /// Close once the response's last bytes are written.
        case closeAfterLastWrite
    }

    case none
    /// Make sure the connection's single timer fires no later than this.
    case scheduleTimer(NIODeadline)
    /// Find an upstream for the current exchange: the pool first, else a dial through the connector.
    case connectUpstream(UpstreamRoute)
    /// A connection was just attached: send the head and every buffered part (bodies and the
    /// end, never a head), flush.
    case sendRequest(HTTPRequestHead, buffered: [HTTPServerRequestPart], timer: NIODeadline?)
    /// Forward a request part upstream (flushing after the end).
    case writeUpstream(HTTPClientRequestPart, timer: NIODeadline?)
    /// Let the exchange's upstream be read, or stop reading it (the client's writability).
    case upstreamReads(allowed: Bool)
    /// Write a response part to the client (`flush` after the end).
    case writeClient(HTTPServerResponsePart, timer: NIODeadline?)
    /// The response's end: write it (tracking when it is on the wire), dispose of the upstream,
    /// log, then go on.
    case finishExchange(trailers: HTTPHeaders?, upstream: UpstreamDisposal, log: AccessLogRecord?, then: AfterExchange)
    /// Answer with an error (text body, `Connection: close`), log it, close after the write.
    case respondWithError(ProxyError, record: AccessLogRecord, closeUpstream: Bool)
    /// Check Basic proxy credentials (cached, or hashed off the event loop); the verdict comes
    /// back through `credentialsChecked`.
    case authenticate(ProxyCredentials)
    /// Answer 407 with the challenge, log it; close after the write unless `keepAlive`.
    case refuseCredentials(ProxyError, record: AccessLogRecord, keepAlive: Bool)
    /// Answer with the proxy's own response, log it, close after the write.
    case respondLocally(LocalAnswer, record: AccessLogRecord)
    /// Close the client connection now (and the upstream with it), logging `log` if set.
    case close(closeUpstream: Bool, log: AccessLogRecord?)
    /// Close once the last response's bytes are on the wire.
    case closeAfterLastWrite
    /// The upstream connection closed before answering: note `blamed` as failing (when the
    /// address is at fault), then dial again with it tried last (a fresh connection, not the pool).
    case retryUpstream(UpstreamRoute, blamed: FailedAddress?)
    /// The upstream failed: note `blamed` as failing, then run `then`.
    indirect case upstreamFailed(blamed: FailedAddress, then: ClientConnectionAction)
    /// Dial a CONNECT target (plain TCP).
    case connectTunnel(RequestTarget)
    /// Start the switch to a tunnel: for an upgrade the origin's 101 goes out first; the HTTP
    /// decoders are removed and the machine hears back through `httpHandlersRemoved`.
    case beginTunnelSwitch(upgradeHead: HTTPResponseHead?)
    /// Glue the two channels, replay `clientBytes` towards the origin (after the proxy's own 200
    /// when `sayEstablished`); the machine hears back through `tunnelInstalled`/`tunnelInstallFailed`.
    case installTunnel(record: AccessLogRecord, started: NIODeadline, clientBytes: HeldBytes, sayEstablished: Bool)
}
