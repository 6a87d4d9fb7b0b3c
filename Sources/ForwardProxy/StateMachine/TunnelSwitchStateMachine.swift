import NIOCore
import ProxyAccess
import ProxyHTTP
import ProxyKit
import ProxyUpstream

/// A connection on its way to becoming a byte tunnel (anchor: NIO's
/// `NIOTypedHTTPServerUpgraderStateMachine`): a CONNECT target is dialed, or an origin accepted an
/// upgrade; then the HTTP handlers are removed, then the glue is installed. What the tunnel's
/// record says and the client bytes that arrive meanwhile live here, not in closures of the
/// handler. `ClientConnectionStateMachine` owns it until the tunnel is installed or abandoned.
struct TunnelSwitchStateMachine {
    /// What the connection machine must do after a tunnel event.
    enum Action {
        /// The switch goes on; the handler runs `effect` (`.none`, the start of the switch, the install).
        case proceed(ClientConnectionAction.Effect)
        /// The CONNECT target could not be dialed: answer `error` (the record has its status and
        /// time) and close.
        case answer(ProxyError, record: AccessLogRecord)
        /// The switch is over: installed (the tunnel's recorder logs it from now on), or abandoned
        /// (both sides close). The handler runs `effect`; the connection's machine is done.
        case finished(ClientConnectionAction.Effect)
    }

    private enum State {
        /// A CONNECT target is being dialed; nothing is read meanwhile.
        case dialing
        /// The HTTP decoders are being removed (asynchronously); raw client bytes are held.
        case removingHandlers
        /// The glue is being installed (synchronously, inside one action).
        case installing
    }

    private var state: State
    private var record: AccessLogRecord
    private let started: NIODeadline
    /// CONNECT: the proxy answers 200 itself once the glue is in place (an upgrade's 101 came
    /// from the origin and went out first).
    private let sayEstablished: Bool
    /// The tunnel closes after this long without traffic (the settings of the request that asked for it).
    private let idleTimeout: TimeAmount
    /// Raw client bytes that arrived after the request that asked for the tunnel.
    private var buffered = HeldBytes()

    /// A CONNECT whose target is about to be dialed. `started`: when its head arrived.
    init(connecting record: AccessLogRecord, started: NIODeadline, idleTimeout: TimeAmount) {
        (state, self.record, self.started, sayEstablished, self.idleTimeout) = (.dialing, record, started, true, idleTimeout)
    }

    /// An upgrade the origin accepted: its 101 goes out, then the handlers are removed.
    init(upgrade record: AccessLogRecord, started: NIODeadline, idleTimeout: TimeAmount) {
        (state, self.record, self.started, sayEstablished, self.idleTimeout) = (.removingHandlers, record, started, false, idleTimeout)
    }

    /// The record of the tunnel being set up.
    var currentRecord: AccessLogRecord { record }

    /// Whether the client may be read: not while dialing; while switching, what arrives is held
    /// for the tunnel.
    var readAllowed: Bool {
        if case .dialing = state { return false }
        return true
    }

    mutating func handle(_ event: TunnelEvent, now: NIODeadline) -> Action {
        switch event {
        case .connected(let info): connected(info)
        case .connectFailed(let error): connectFailed(error, now: now)
        case .rawBytes(let bytes): rawBytes(bytes)
        case .handlersRemoved(let succeeded): handlersRemoved(succeeded: succeeded, now: now)
        case .installed: installed()
        case .installFailed: installFailed(now: now)
        }
    }

    /// The CONNECT target answered: the tunnel can be set up.
    private mutating func connected(_ info: UpstreamConnectInfo) -> Action {
        guard case .dialing = state else { return .proceed(.none) }
        record.dialedIP = info.dialedIP
        record.source = info.source
        record.resolveMs = info.resolveMs
        record.connectMs = info.connectMs
        record.status = 200
        state = .removingHandlers
        return .proceed(.beginTunnelSwitch(upgradeHead: nil))
    }

    private mutating func connectFailed(_ error: ProxyError, now: NIODeadline) -> Action {
        guard case .dialing = state else { return .proceed(.none) }
        record.fail(error)
        var answered = record
        answered.status = error.statusCode
        answered.totalMs = (now - started).milliseconds
        return .answer(error, record: answered)
    }

    /// Raw client bytes that arrive while the switch is under way.
    private mutating func rawBytes(_ bytes: NIOAny) -> Action {
        if case .dialing = state { return .proceed(.none) }
        buffered.parts.append(bytes)
        return .proceed(.none)
    }

    /// The HTTP decoders are gone (`succeeded`), or their removal failed, or a channel closed
    /// meanwhile (`!succeeded`): install the glue with the held bytes, or give up and close.
    private mutating func handlersRemoved(succeeded: Bool, now: NIODeadline) -> Action {
        // Otherwise an impossible second completion.
        guard case .removingHandlers = state else { return .proceed(.none) }
        guard succeeded else { return abandon(now: now) }
        state = .installing
        let bytes = buffered
        buffered = HeldBytes()
        return .proceed(.installTunnel(record: record, started: started, clientBytes: bytes, sayEstablished: sayEstablished, idleTimeout: idleTimeout))
    }

    private mutating func installed() -> Action {
        guard case .installing = state else { return .proceed(.none) }
        return .finished(.none)
    }

    /// Installing the glue failed (a channel closed under it): close both sides, log the attempt.
    private mutating func installFailed(now: NIODeadline) -> Action {
        guard case .installing = state else { return .proceed(.none) }
        return abandon(now: now)
    }

    /// The client went away (`reason` client_closed or client_error) while the tunnel was dialed
    /// or being set up: the record says so and the upstream side is closed. During the install
    /// itself the tunnel's recorder owns the record already: only close.
    mutating func clientLeft(_ reason: String, now: NIODeadline) -> Action {
        let message = reason == "client_error" ? "client connection error" : "client closed the connection"
        switch state {
        case .dialing, .removingHandlers:
            record.abort(reason, message: "\(message) before the tunnel was set up")
            return .finished(.close(closeUpstream: true, log: ended(now: now)))
        case .installing:
            return .finished(.close(closeUpstream: true, log: nil))
        }
    }

    private mutating func abandon(now: NIODeadline) -> Action {
        record.fail(ProxyError(.upstreamClosed, "the connection closed while switching to a tunnel"))
        return .finished(.close(closeUpstream: true, log: ended(now: now)))
    }

    private func ended(now: NIODeadline) -> AccessLogRecord {
        var final = record
        final.totalMs = (now - started).milliseconds
        return final
    }
}
