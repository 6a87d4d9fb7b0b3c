import NIOCore
import NIOHTTP1

/// The life of one upstream HTTP/1.1 connection as a value: who owns it (nobody, an exchange, a
/// tunnel being set up), whether it may be read (the client's writability), and a release asked
/// for inside a read. `UpstreamHTTPConnection` feeds it channel events and does what it returns.
struct UpstreamConnectionStateMachine {
    enum State {
        /// Fresh, or idle in the pool: bytes arriving now are bytes nobody asked for.
        case unowned
        /// Serving one client exchange.
        case serving
        /// An upgrade was accepted: what arrives is raw tunnel bytes, kept for the glue.
        /// `awaitingEnd`: the decoder still owes the `.end` of the 101 response, which is dropped.
        case collecting(awaitingEnd: Bool, parts: [NIOAny])
        case closed
    }

    /// What to do with a response part that arrived.
    enum Inbound: Equatable {
        /// Hand it to the exchange.
        case deliver
        /// Nothing (kept for a tunnel, or the 101's end).
        case keep
        /// Nobody asked for it: the origin broke framing, close.
        case close
    }

    /// What to do when a read from the origin is over.
    enum ReadComplete {
        case none
        /// A release was asked for inside the read: the connection goes to `pool` now (or is
        /// closed if it is no longer usable).
        case release(to: UpstreamPool)
    }

    private(set) var state = State.unowned
    /// The first error the channel reported, given to the exchange when the connection closes.
    private(set) var closeError: (any Error)?
    private var readsAllowed = true
    /// A read was asked for while reads were not allowed.
    private var readPending = false
    /// Inside a read from the origin.
    private var inRead = false
    private var pendingRelease: UpstreamPool?

    var isClosed: Bool {
        if case .closed = state { return true }
        return false
    }

    var isCollecting: Bool {
        if case .collecting = state { return true }
        return false
    }

    // MARK: ownership

    /// An exchange takes the connection (fresh, or from the pool).
    /// Returns false when the channel already closed: its close found no exchange to tell, so
    /// the one taking it now must be told by the caller.
    @discardableResult
    mutating func attached() -> Bool {
        switch state {
        case .unowned:
            state = .serving
            return true
        case .closed:
            return false
        case .serving, .collecting:
            return true
        }
    }

    /// The exchange is over and the response ended cleanly: returns true when the connection may go
    /// to the pool at once; inside a read it goes when the read is over (a pipelined request must
    /// not take a connection whose decoder still holds bytes that followed the response).
    mutating func released(to pool: UpstreamPool) -> Bool {
        if case .serving = state { state = .unowned }
        guard inRead else { return true }
        pendingRelease = pool
        return false
    }

    /// The exchange let go without a release (closing it, or the pool taking it back).
    mutating func detached() {
        if case .serving = state { state = .unowned }
    }

    /// An upgrade was accepted: from now on inbound bytes are kept for the tunnel.
    mutating func startCollecting(expectingEnd: Bool) {
        guard !isClosed else { return }
        state = .collecting(awaitingEnd: expectingEnd, parts: [])
    }

    /// The bytes kept for the tunnel; the connection belongs to nobody afterwards.
    mutating func takeCollected() -> [NIOAny] {
        guard case .collecting(_, let parts) = state else { return [] }
        state = .unowned
        return parts
    }

    /// A close is asked for: a release waiting for the end of a read is void.
    mutating func closing() {
        pendingRelease = nil
    }

    // MARK: channel events

    /// A response part arrived (from the decoder).
    mutating func responsePart(_ part: UpstreamResponsePart) -> Inbound {
        switch state {
        case .serving:
            inRead = true
            return .deliver
        case .unowned, .closed:
            return .close
        case .collecting(let awaitingEnd, let parts):
            if awaitingEnd, case .end = part { state = .collecting(awaitingEnd: false, parts: parts) }
            return .keep
        }
    }

    /// Raw bytes while collecting (the decoder is gone); returns false when not collecting.
    mutating func rawBytes(_ data: NIOAny) -> Bool {
        guard case .collecting(let awaitingEnd, var parts) = state, !awaitingEnd else { return false }
        state = .unowned
        parts.append(data)
        state = .collecting(awaitingEnd: false, parts: parts)
        return true
    }

    /// Whether the decoder still owes the `.end` of an accepted upgrade's 101.
    var awaitsUpgradeEnd: Bool {
        if case .collecting(true, _) = state { return true }
        return false
    }

    mutating func readComplete() -> ReadComplete {
        inRead = false
        guard let pool = pendingRelease else { return .none }
        pendingRelease = nil
        return .release(to: pool)
    }

    mutating func errorCaught(_ error: any Error) {
        if closeError == nil { closeError = error }
    }

    /// The channel closed. Returns whether an exchange owned it (and must be told).
    mutating func channelClosed() -> Bool {
        let owned: Bool
        if case .serving = state { owned = true } else { owned = false }
        state = .closed
        pendingRelease = nil
        return owned
    }

    // MARK: reading (the client's writability)

    /// Reads allowed or not; returns true when a read held back must be issued now.
    mutating func setReadsAllowed(_ allowed: Bool) -> Bool {
        readsAllowed = allowed
        guard allowed, readPending else { return false }
        readPending = false
        return true
    }

    /// A read is asked for: returns whether to pass it on now (else it is held until allowed).
    mutating func readRequested() -> Bool {
        if readsAllowed || isCollecting { return true }
        readPending = true
        return false
    }
}
