import NIOCore
import ProxyAccess
import ProxyHTTP
import ProxyKit
import ProxyUpstream

/// The state of one client connection. Only `ClientConnectionStateMachine` holds one (in a
/// private property) and changes it; what is derived from it alone lives here.
enum ClientConnectionState {
    /// No request in progress.
    case idle(Wait)
    /// A request in progress. Events move the exchange out of the state (`takeExchange`), run on
    /// it and put it back unless they ended it.
    case exchange(ExchangeStateMachine)
    /// The request's credentials are being verified (off the event loop); nothing is read
    /// meanwhile and parts that arrive are queued.
    case authenticating(RequestHead, started: NIODeadline)
    /// A request was refused (407) on a connection that stays open: its remaining parts (only its
    /// end: a refused request with a body closes instead) are dropped.
    case discardingRefusedRequest
    /// Becoming a tunnel: a CONNECT target dialed, or an upgrade accepted, until the glue is in place.
    case tunnel(TunnelSwitchStateMachine)
    /// Answered for the last time: nothing more is read or answered.
    case closing
    case closed
    /// Only while an event holds the sub-machine it took out of the state.
    case modifying

    /// Waiting between requests.
    enum Wait: Equatable {
        /// For the next request on a kept-alive connection: closed silently at the deadline.
        case nextRequest(NIODeadline)
        /// For the rest of a head whose first bytes arrived: 408 at the deadline.
        case requestHead(NIODeadline)

        var deadline: NIODeadline {
            switch self {
            case .nextRequest(let deadline), .requestHead(let deadline): deadline
            }
        }
    }

    /// What the connection is doing, without the contents (for tests).
    enum Phase {
        case idle(Wait), exchange, authenticating, discardingRefusedRequest, tunnel, closing, closed
    }

    var phase: Phase {
        switch self {
        case .idle(let wait): .idle(wait)
        case .exchange: .exchange
        case .authenticating: .authenticating
        case .discardingRefusedRequest: .discardingRefusedRequest
        case .tunnel: .tunnel
        case .closing, .modifying: .closing
        case .closed: .closed
        }
    }

    /// The record of the exchange or tunnel in progress.
    var currentRecord: AccessLogRecord? {
        switch self {
        case .exchange(let exchange): exchange.record
        case .tunnel(let tunnel): tunnel.currentRecord
        default: nil
        }
    }

    /// Whether the client may be read, given whether requests wait in the queue and whether the
    /// upstream takes more bytes.
    func readAllowed(queueIsEmpty: Bool, upstreamWritable: Bool) -> Bool {
        switch self {
        case .idle, .discardingRefusedRequest: queueIsEmpty
        case .exchange(let exchange): queueIsEmpty && exchange.readAllowed(upstreamWritable: upstreamWritable)
        case .tunnel(let tunnel): tunnel.readAllowed
        case .authenticating, .closing, .closed, .modifying: false
        }
    }

    /// Whether a queued part may be served now (not while an exchange's response is awaited).
    var servesQueuedParts: Bool {
        switch self {
        case .idle, .discardingRefusedRequest: true
        case .exchange(let exchange): !exchange.requestComplete
        default: false
        }
    }

    /// The exchange in progress wants the upstream being dialed (or taken from the pool).
    var exchangeIsConnecting: Bool {
        if case .exchange(let exchange) = self { return exchange.isConnecting }
        return false
    }

    var exchangeIsAttached: Bool {
        if case .exchange(let exchange) = self { return exchange.isAttached }
        return false
    }

    /// Moves the exchange in progress out (nil when there is none), leaving `.modifying`: `swap`
    /// moves it, so changing it copies nothing.
    mutating func takeExchange() -> ExchangeStateMachine? {
        guard case .exchange = self else { return nil }
        var taken = Self.modifying
        swap(&taken, &self)
        guard case .exchange(let exchange) = consume taken else { return nil }
        return exchange
    }

    /// Moves the tunnel being set up out, as `takeExchange`.
    mutating func takeTunnel() -> TunnelSwitchStateMachine? {
        guard case .tunnel = self else { return nil }
        var taken = Self.modifying
        swap(&taken, &self)
        guard case .tunnel(let tunnel) = consume taken else { return nil }
        return tunnel
    }
}
