import NIOCore
import NIOHTTP1
import ProxyKit

/// A connection on its way to becoming a byte tunnel (anchor: NIO's
/// `NIOTypedHTTPServerUpgraderStateMachine`): the HTTP handlers are removed, then the glue is
/// installed. What the tunnel's record says and the client bytes that arrive meanwhile live here,
/// not in closures of the handler.
struct TunnelSwitchState {
    enum Phase: Equatable {
        /// The HTTP decoders are being removed (asynchronously).
        case removingHandlers
        /// The glue is being installed (synchronously, inside one action).
        case installing
    }

    /// The origin's 101 for an upgrade; nil for CONNECT (the proxy says 200 itself).
    var upgradeHead: HTTPResponseHead?
    var record: AccessLogRecord
    var started: NIODeadline
    var phase = Phase.removingHandlers
    /// Raw client bytes that arrived after the request that asked for the tunnel.
    var buffered = HeldBytes()
}

/// Raw client bytes held for a tunnel. `NIOAny` has no equality; actions compare them by count.
struct HeldBytes: Equatable {
    var parts: [NIOAny] = []

    static func == (lhs: HeldBytes, rhs: HeldBytes) -> Bool { lhs.parts.count == rhs.parts.count }
}

extension ClientConnectionStateMachine {
    /// The CONNECT target answered: the tunnel can be set up.
    mutating func tunnelConnected(_ info: UpstreamConnectInfo) -> ClientConnectionAction {
        guard case .connectingTunnel(var record, let started) = state else { return .none }
        record.dialedIP = info.dialedIP
        record.source = info.source
        record.resolveMs = info.resolveMs
        record.connectMs = info.connectMs
        record.status = 200
        state = .switchingProtocols(TunnelSwitchState(upgradeHead: nil, record: record, started: started))
        return .beginTunnelSwitch(upgradeHead: nil)
    }

    mutating func tunnelConnectFailed(_ error: ProxyError, now: NIODeadline) -> ClientConnectionAction {
        guard case .connectingTunnel(var record, let started) = state else { return .none }
        record.fail(error)
        var answered = record
        answered.status = Int(error.status.code)
        answered.totalMs = (now - started).milliseconds
        state = .closing
        return .respondWithError(error, record: answered, closeUpstream: false)
    }

    /// Whether a CONNECT dial that just completed is still wanted.
    var wantsTunnel: Bool {
        if case .connectingTunnel = state { return true }
        return false
    }

    /// Whether raw client bytes now belong to a tunnel being set up.
    var isSwitching: Bool {
        if case .switchingProtocols = state { return true }
        return false
    }

    /// Raw client bytes that arrive while the HTTP handlers are being removed.
    mutating func rawBytes(_ buffer: NIOAny) {
        guard case .switchingProtocols(var switching) = state else { return }
        state = .modifying
        switching.buffered.parts.append(buffer)
        state = .switchingProtocols(switching)
    }

    /// The HTTP decoders are gone (`succeeded`), or their removal failed, or a channel closed
    /// meanwhile (`!succeeded`): install the glue with the held bytes, or give up and close.
    mutating func httpHandlersRemoved(succeeded: Bool, now: NIODeadline) -> ClientConnectionAction {
        guard case .switchingProtocols(var switching) = state, switching.phase == .removingHandlers else {
            // The client closed meanwhile (already logged), or an impossible second completion.
            return .none
        }
        guard succeeded else {
            return abandonSwitch(switching, now: now)
        }
        state = .modifying
        let bytes = switching.buffered
        switching.buffered = HeldBytes()
        switching.phase = .installing
        let action = ClientConnectionAction.installTunnel(
            record: switching.record, started: switching.started, clientBytes: bytes,
            sayEstablished: switching.upgradeHead == nil
        )
        state = .switchingProtocols(switching)
        return action
    }

    /// The glue is in place: the tunnel's recorder logs it from now on; the machine's work is over.
    /// (The client may already have gone during the install itself: then the state is closed.)
    mutating func tunnelInstalled() {
        guard case .switchingProtocols(let switching) = state, switching.phase == .installing else { return }
        state = .closed
    }

    /// Installing the glue failed (a channel closed under it): close both sides, log the attempt.
    mutating func tunnelInstallFailed(now: NIODeadline) -> ClientConnectionAction {
        guard case .switchingProtocols(let switching) = state, switching.phase == .installing else {
            // The client went away during the install (handled then).
            return .none
        }
        return abandonSwitch(switching, now: now)
    }

    /// The client went away (`reason` client_closed or client_error) while the tunnel was dialed
    /// or being set up: the record says so and the upstream side is closed. During the install
    /// itself the tunnel's recorder owns the record already: only close.
    mutating func tunnelAbandonedByClient(_ reason: String, now: NIODeadline) -> ClientConnectionAction? {
        let message = reason == "client_error" ? "client connection error" : "client closed the connection"
        switch state {
        case .connectingTunnel(var record, let started):
            record.abort(reason, message: "\(message) before the tunnel was set up")
            record.totalMs = (now - started).milliseconds
            state = .closed
            return .close(closeUpstream: true, log: record)
        case .switchingProtocols(var switching) where switching.phase == .removingHandlers:
            switching.record.abort(reason, message: "\(message) before the tunnel was set up")
            state = .closed
            return .close(closeUpstream: true, log: Self.ended(switching, now: now))
        case .switchingProtocols:
            state = .closed
            return .close(closeUpstream: true, log: nil)
        default:
            return nil
        }
    }

    private mutating func abandonSwitch(_ switching: TunnelSwitchState, now: NIODeadline) -> ClientConnectionAction {
        var switching = switching
        switching.record.fail(ProxyError(.upstreamClosed, "the connection closed while switching to a tunnel"))
        state = .closed
        return .close(closeUpstream: true, log: Self.ended(switching, now: now))
    }

    private static func ended(_ switching: TunnelSwitchState, now: NIODeadline) -> AccessLogRecord {
        var record = switching.record
        record.totalMs = (now - switching.started).milliseconds
        return record
    }
}
