import NIOCore
import NIOHTTP1
import ProxyHTTP
import ProxyKit
import ProxyUpstream

/// What the connector (or the pool) says about the connection that now carries an exchange.
struct UpstreamConnectInfo: Equatable {
    /// Taken from the pool rather than dialed.
    var pooled: Bool
    var dialedIP: String?
    var source: String?
    var resolveMs: Double?
    var connectMs: Double?
    var tlsMs: Double?
    var tlsResumed: Bool?
    /// The upstream channel can take bytes now.
    var writable: Bool = true
}

/// Why an upstream connection closed while it carried an exchange.
enum UpstreamCloseReason: Equatable {
    /// The origin closed (FIN) with no error.
    case closed
    /// A reset or another I/O error; `reason` is a short description for the client.
    case failed(reason: String)
    /// The origin broke HTTP framing (the decoder or the framing guard failed).
    case invalidResponse(reason: String)
}

extension ClientConnectionStateMachine {
    /// Whether a connect issued for exchange `number` is still wanted (a connect can complete after
    /// its exchange failed or the client left; then the new channel is closed).
    func wantsUpstream(forExchange number: Int) -> Bool {
        guard number == exchangeNumber, case .exchange(let exchange) = state else { return false }
        return exchange.upstream == .connecting
    }

    /// An upstream connection is attached to the current exchange: send the request.
    mutating func upstreamConnected(_ info: UpstreamConnectInfo, now: NIODeadline) -> ClientConnectionAction {
        guard var exchange = takeExchange() else { return Self.impossible("an upstream attached outside an exchange") }
        defer { putBack(exchange) }
        guard exchange.upstream == .connecting else { return Self.impossible("an upstream attached to an exchange that has one") }
        exchange.upstream = .attached(pooled: info.pooled)
        upstreamWritable = info.writable
        if info.pooled {
            exchange.record.reused = true
            exchange.record.source = "pool"
            exchange.record.dialedIP = info.dialedIP
        } else {
            exchange.record.dialedIP = info.dialedIP
            exchange.record.source = info.source
            exchange.record.resolveMs = info.resolveMs
            exchange.record.connectMs = info.connectMs
            exchange.record.tlsMs = info.tlsMs
            exchange.record.tlsResumed = info.tlsResumed
        }
        // The parts that waited go out behind the head; the array moves into the action.
        let buffered = exchange.buffered
        exchange.buffered = []
        return .sendRequest(exchange.request.head, buffered: buffered, timer: touchUpstream(&exchange, now: now))
    }

    /// No upstream could be had for the current exchange.
    mutating func upstreamConnectFailed(_ error: ProxyError, now: NIODeadline) -> ClientConnectionAction {
        guard case .exchange(let exchange) = state, exchange.upstream == .connecting else {
            return Self.impossible("a connect failed for no connecting exchange")
        }
        return failExchange(exchange, error, now: now)
    }

    /// The connection made for the current exchange closed before anything was sent on it (the
    /// origin closed it as it was made; its close found no exchange to tell). Nothing reached the
    /// origin, so any request, a POST with its buffered body too, is tried once more on a new
    /// connection that avoids the address; the second time it is a 502.
    mutating func upstreamClosedBeforeUse(dialed: FailedAddress?, now: NIODeadline) -> ClientConnectionAction {
        guard var exchange = takeExchange() else { return Self.impossible("an unused upstream closed outside an exchange") }
        defer { putBack(exchange) }
        guard exchange.upstream == .connecting else { return Self.impossible("an unused upstream closed for an exchange that has one") }
        if !exchange.retried {
            exchange.retried = true
            exchange.lastUpstreamActivity = nil
            return .retryUpstream(exchange.route, blamed: dialed)
        }
        let failure = failExchange(
            exchange,
            ProxyError(.upstreamClosed, "\(exchange.target.host) closed the connection as soon as it was made"),
            now: now
        )
        guard let dialed else { return failure }
        return .upstreamFailed(blamed: dialed, then: failure)
    }

    /// A response head from the origin: interim (1xx), the final one, or the 101 of an upgrade.
    mutating func upstreamHead(_ head: HTTPResponseHead, now: NIODeadline) -> ClientConnectionAction {
        guard var exchange = takeExchange() else { return Self.impossible("a response head outside an exchange") }
        defer { putBack(exchange) }
        let code = head.status.code
        if (100..<200).contains(code) && code != 101 {
            exchange.responsePhase = .awaiting(sawBytes: true)
            let timer = touchUpstream(&exchange, now: now)
            // Interim responses (100 Continue, 103 Early Hints) go to HTTP/1.1 clients as they are.
            guard exchange.clientHead.version.minor >= 1 else { return timer.map { .scheduleTimer($0) } ?? .none }
            var interim = HTTPResponseHead(version: .http1_1, status: head.status)
            for (name, value) in head.headers where !MessageRewriter.isHopByHop(name) {
                interim.headers.add(name: name, value: value)
            }
            return .writeClient(.head(interim), timer: timer)
        }
        let wantsUpgrade = exchange.request.isUpgrade
        let isUpgrade = wantsUpgrade && code == 101
        var response: MessageRewriter.RewrittenResponse
        do throws(ProxyError) {
            if code == 101 && !isUpgrade {
                throw ProxyError(.invalidResponse, "\(exchange.target.host) switched protocols (101) without being asked to")
            }
            response = try MessageRewriter.rewriteResponse(
                head,
                requestMethod: exchange.clientHead.method,
                clientVersion: exchange.clientHead.version,
                clientKeepAlive: exchange.clientHead.isKeepAlive && !closeAfterExchange,
                isUpgradeResponse: isUpgrade,
                via: settings.via
            )
        } catch {
            return failExchange(exchange, error, now: now)
        }
        if let field = settings.configuration.requestIDHeader, let id = exchange.record.requestID {
            // The client gets the id its request was logged and forwarded with.
            response.head.headers.replaceOrAdd(name: field, value: id)
        }
        exchange.record.status = Int(code)
        if settings.recordsEnabled {
            exchange.record.ttfbMs = (now - exchange.started).milliseconds
        }
        if wantsUpgrade && !isUpgrade {
            // The decoder stopped parsing after the upgrade request; this connection cannot carry
            // another request.
            closeAfterExchange = true
        }
        if isUpgrade {
            var record = exchange.record
            record.kind = .tunnel
            state = .switchingProtocols(TunnelSwitchState(upgradeHead: response.head, record: record, started: exchange.started))
            return .beginTunnelSwitch(upgradeHead: response.head)
        }
        exchange.responsePhase = .streaming(response)
        return .writeClient(.head(response.head), timer: touchUpstream(&exchange, now: now))
    }

    mutating func upstreamBody(_ buffer: ByteBuffer, now: NIODeadline) -> ClientConnectionAction {
        guard var exchange = takeExchange() else { return Self.impossible("a response body outside an exchange") }
        defer { putBack(exchange) }
        exchange.record.bytesDown += buffer.readableBytes
        return .writeClient(.body(.byteBuffer(buffer)), timer: touchUpstream(&exchange, now: now))
    }

    /// The response ended. With the request complete too, the exchange is over; an early response
    /// (the request body still coming) closes the connection: the rest cannot be skipped safely.
    mutating func upstreamEnd(_ trailers: HTTPHeaders?, now: NIODeadline) -> ClientConnectionAction {
        guard var exchange = takeExchange() else { return Self.impossible("a response end outside an exchange") }
        defer { putBack(exchange) }
        guard case .streaming(let response) = exchange.responsePhase else {
            return Self.impossible("a response end before its head")
        }
        exchange.responsePhase = .complete(response)
        exchange.lastUpstreamActivity = nil
        let forwarded = response.clientFraming == .chunked ? MessageFraming.forwardableTrailers(trailers) : nil
        let log = finalRecord(exchange, now: now)
        guard exchange.requestComplete else {
            closeAfterExchange = true
            state = .closing
            return .finishExchange(trailers: forwarded, upstream: .close, log: log, then: .closeAfterLastWrite)
        }
        let disposal: ClientConnectionAction.UpstreamDisposal = response.upstreamWillClose ? .close : .release
        if closeAfterExchange || response.closeClient {
            state = .closing
            return .finishExchange(trailers: forwarded, upstream: disposal, log: log, then: .closeAfterLastWrite)
        }
        let deadline = now + settings.configuration.clientIdleTimeout
        state = .idle(.nextRequest(deadline))
        _ = scheduleTimer(by: deadline)
        return .finishExchange(trailers: forwarded, upstream: disposal, log: log, then: .next(idleDeadline: deadline))
    }

    /// The upstream connection of the current exchange closed; `dialed`: its address and the kind
    /// of failure its error says (nil when unknown).
    mutating func upstreamClosed(_ reason: UpstreamCloseReason, dialed: FailedAddress?, now: NIODeadline) -> ClientConnectionAction {
        guard var exchange = takeExchange() else { return Self.impossible("an upstream closed outside an exchange") }
        defer { putBack(exchange) }
        guard case .attached(let pooled) = exchange.upstream else { return Self.impossible("an upstream closed that was not attached") }
        exchange.upstream = .none
        if exchange.responseComplete { return .none }
        if case .invalidResponse(let reason) = reason {
            // The origin broke HTTP framing: not the address's fault, and not worth a retry.
            return failExchange(exchange, ProxyError(.invalidResponse, "\(exchange.target.host) sent an invalid response: \(reason)"), now: now)
        }
        var blame = false
        if !exchange.sawResponseBytes {
            // Closed or reset before any response byte. On a fresh connection, or with a reset, the
            // address is at fault: it goes into back-off and the retry avoids it. A pooled
            // connection closed cleanly is the keep-alive race (the origin dropped an idle
            // connection just as we reused it), which says nothing about the address.
            blame = !pooled || reason != .closed
            if !exchange.retried && exchange.isSafeToRetry {
                // Idempotent and bodiless: sent again once, on another address when there is one.
                exchange.retried = true
                exchange.record.reused = false
                exchange.lastUpstreamActivity = nil
                exchange.upstream = .connecting
                if exchange.requestComplete { exchange.buffered = [.end(nil)] }
                return .retryUpstream(exchange.route, blamed: blame ? dialed : nil)
            }
        }
        var detail = ""
        if case .failed(let why) = reason { detail = " (\(why))" }
        let error = ProxyError(
            .upstreamClosed,
            exchange.responseStarted
                ? "\(exchange.target.host) closed the connection mid-response\(detail)"
                : "\(exchange.target.host) closed the connection without answering\(detail)"
        )
        let failure = failExchange(exchange, error, now: now)
        guard blame, let dialed else { return failure }
        return .upstreamFailed(blamed: dialed, then: failure)
    }
}
