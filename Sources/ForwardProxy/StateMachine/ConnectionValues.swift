import NIOCore
import ProxyAccess
import ProxyHTTP
import ProxyKit
import ProxyUpstream

// The small values `ClientConnectionStateMachine` keeps besides its state.

/// Request parts read while an earlier request was still being served (pipelining), in order.
struct PipelineQueue {
    /// Pipelined requests read ahead of the one being served: from this many on (or this many
    /// queued body bytes) the decoder stops parsing and the socket is not read (`readAheadFull`),
    /// so the client is slowed down by TCP instead of refused.
    static let readAheadRequests = 16
    static let readAheadBodyBytes = 256 << 10
    /// Hard bounds of the queue. Reading stops at the read-ahead marks above, and the decoder
    /// parses nothing past the part that reached them (a body slice is one receive buffer at
    /// most), so these are reached only by what cannot be held back; then the next request is
    /// answered 503 (in order, after the queued ones) and the connection closes.
    static let maxQueuedRequests = 8_192
    static let maxQueuedBodyBytes = 1 << 20

    /// The answer to the next request once the queue overflowed and everything before is answered.
    static let overflow = ProxyError(
        .overloaded, "more than \(maxQueuedRequests) pipelined requests (or \(maxQueuedBodyBytes) body bytes) were sent ahead; send the rest again"
    )
    /// The answer to a request whose body passes the bound while its credentials are checked.
    static let uncheckedBodyTooLarge = ProxyError(.overloaded, "more than \(maxQueuedBodyBytes) body bytes arrived before the credentials were checked")

    private var parts = CircularBuffer<RequestPart>()
    /// Request heads and body bytes in `parts`.
    private var requests = 0
    private var bodyBytes = 0
    /// More was read ahead than the queue takes: after the queued requests, 503 and close.
    private(set) var overflowed = false

    var isEmpty: Bool { parts.isEmpty }
    var count: Int { parts.count }

    /// At a read-ahead mark: no more bytes for the decoder.
    var readAheadFull: Bool {
        requests >= Self.readAheadRequests || bodyBytes >= Self.readAheadBodyBytes
    }

    /// Whether `count` more body bytes fit under the hard bound.
    func takesBody(_ count: Int) -> Bool {
        bodyBytes + count <= Self.maxQueuedBodyBytes
    }

    /// Queues a part read ahead, within the bounds; past them the rest is dropped and the
    /// connection ends after the queued requests.
    mutating func enqueue(_ part: RequestPart) {
        guard !overflowed else { return }
        switch part {
        case .head:
            guard requests < Self.maxQueuedRequests else {
                overflowed = true
                return
            }
            requests += 1
        case .body(let buffer):
            guard takesBody(buffer.readableBytes) else {
                // The request whose body overflowed cannot be served whole: drop it from the queue.
                overflowed = true
                dropLastRequest()
                return
            }
            bodyBytes += buffer.readableBytes
        case .end:
            break
        }
        parts.append(part)
    }

    mutating func dequeue() -> RequestPart? {
        guard let part = parts.popFirst() else { return nil }
        noteRemoved(part)
        return part
    }

    mutating func clear() {
        parts.removeAll()
        (requests, bodyBytes) = (0, 0)
    }

    private mutating func dropLastRequest() {
        while let part = parts.popLast() {
            noteRemoved(part)
            if case .head = part { return }
        }
    }

    private mutating func noteRemoved(_ part: RequestPart) {
        switch part {
        case .head: requests -= 1
        case .body(let buffer): bodyBytes -= buffer.readableBytes
        case .end: break
        }
    }
}

/// The `Proxy-Authorization` value last verified on the connection and its user: a kept-alive
/// client repeats it on every request, which then costs one string comparison.
struct VerifiedCredentials {
    private var verified: (field: String, user: String)?
    /// The common name of the client's verified TLS certificate (mutual TLS), which authenticates
    /// every request of the connection.
    private(set) var certificateUser: String?

    /// The user: the certificate's, or the one of exactly the field verified last when `head` carries it.
    func user(for head: RequestHead) -> String? {
        if let certificateUser { return certificateUser }
        guard let verified else { return nil }
        let fields = head.proxyAuthorization.listValues("proxy-authorization")
        guard fields.count == 1, fields[0] == verified.field else { return nil }
        return verified.user
    }

    mutating func remember(_ head: RequestHead, user: String) {
        if let field = head.firstField("proxy-authorization") { verified = (field, user) }
    }

    mutating func certified(_ user: String) {
        certificateUser = user
    }

    /// The users changed (a reload): the next request is checked again (a certificate stays:
    /// the handshake verified it, and the htpasswd file does not name it).
    mutating func forget() {
        verified = nil
    }
}

/// What reading the client depends on besides the state: a read NIO asked for while it was not
/// allowed, and the writability of both channels.
struct ReadGate {
    /// NIO asked to read while reading was not allowed.
    var pendingRead = false
    /// The upstream channel can take more bytes: the client is read only while it can.
    var upstreamWritable = true
    /// The client channel can take more bytes: the upstream is read only while it can.
    var clientWritable = true
}

/// What lasts across the connection's requests.
struct ConnectionLifecycle {
    /// When the connection's one timer is due, if it is scheduled.
    private var timerDeadline: NIODeadline?
    /// The connection closes after the current exchange (client asked, HTTP/1.0, draining, an
    /// upgrade refused after the decoder stopped parsing).
    var closeAfterExchange = false
    /// Request heads seen (refused ones too): the second half of each request's id.
    private var requestsSeen = 0

    /// The deadline the timer must be scheduled for, or nil when it already fires by then.
    /// Deadlines only move later between firings, so a busy connection costs no timer operation.
    mutating func scheduleTimer(by deadline: NIODeadline) -> NIODeadline? {
        if let pending = timerDeadline, pending <= deadline { return nil }
        timerDeadline = deadline
        return deadline
    }

    /// The timer fired: none is scheduled until `rescheduled`.
    mutating func timerFired() {
        timerDeadline = nil
    }

    /// The timer is scheduled again for `deadline` (it fired before it).
    mutating func rescheduled(_ deadline: NIODeadline) -> NIODeadline {
        timerDeadline = deadline
        return deadline
    }

    /// The number of the request whose head is being decided on.
    mutating func nextRequest() -> Int {
        requestsSeen += 1
        return requestsSeen
    }
}
