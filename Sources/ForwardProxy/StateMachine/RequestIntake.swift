import NIOCore
import ProxyAccess
import ProxyHTTP
import ProxyKit
import ProxyUpstream

/// How a request head starts, decided from the head, the connection's settings and what it has
/// verified before: the credential check first (with `--proxy-auth`), then an exchange to
/// forward, a tunnel to dial, an error, or an answer of the proxy's own.
enum RequestIntake {
    typealias Settings = ClientConnectionStateMachine.Settings

    enum Decision {
        case exchange(ExchangeStateMachine, UpstreamRoute)
        case tunnel(TunnelSwitchStateMachine, RequestTarget)
        /// Refused: answered with `error` (the record says why), then the connection closes.
        case refused(ProxyError, AccessLogRecord)
        /// Answered by the proxy itself (Max-Forwards: 0), then the connection closes.
        case answeredLocally(ProxyAnswer, AccessLogRecord)
        /// The credentials must be checked before anything else.
        case authenticate(RequestHead, ProxyCredentials, by: ProxyAuthenticator)
        /// 407; the connection stays open for the client's next try when `keepAlive`.
        case refuseCredentials(ErrorAnswer, AccessLogRecord, keepAlive: Bool)
    }

    /// A request head arrived (`started`). Before anything else an unauthenticated client is
    /// refused: it learns nothing of targets or resolution.
    static func head(
        _ head: RequestHead, started: NIODeadline, draining: Bool, settings: borrowing Settings, credentials: borrowing VerifiedCredentials,
        lifecycle: inout ConnectionLifecycle
    ) -> Decision {
        guard let authenticator = settings.authenticator else {
            return start(head, user: credentials.certificateUser, started: started, draining: draining, settings: settings, lifecycle: &lifecycle)
        }
        if let user = credentials.user(for: head) {
            return start(head, user: user, started: started, draining: draining, settings: settings, lifecycle: &lifecycle)
        }
        switch head.proxyCredentials {
        case .missing:
            let why = "send Basic credentials in Proxy-Authorization"
            return refuse(head, why: why, user: nil, draining: draining, settings: settings, lifecycle: &lifecycle)
        case .malformed(let why):
            return refuse(head, why: why, user: nil, draining: draining, settings: settings, lifecycle: &lifecycle)
        case .basic(let parsed):
            return .authenticate(head, parsed, by: authenticator)
        }
    }

    /// The verdict on the credentials of `head`, which arrived at `started`.
    static func verdict(
        _ verdict: ProxyAuthenticator.Verdict, on head: RequestHead, started: NIODeadline, draining: Bool, settings: borrowing Settings,
        credentials: inout VerifiedCredentials, lifecycle: inout ConnectionLifecycle
    ) -> Decision {
        switch verdict {
        case .allowed(let user):
            credentials.remember(head, user: user)
            return start(head, user: user, started: started, draining: draining, settings: settings, lifecycle: &lifecycle)
        case .denied(let user, _):
            let why = "the credentials for user '\(ProxyError.sanitized(user, limit: 64))' are not valid"
            return refuse(head, why: why, user: user, draining: draining, settings: settings, lifecycle: &lifecycle)
        case .busy:
            var record = record(for: head, number: lifecycle.nextRequest(), settings: settings)
            let error = ProxyError(.overloaded, "too many proxy credential checks in progress")
            record.fail(error)
            return .refused(error, record)
        }
    }

    /// 407. The connection stays open for the client's next try when the refused request has no
    /// body and what follows it is HTTP: not after an upgrade request, nor after a CONNECT whose
    /// head was followed by more bytes (tunnel bytes sent ahead). Browsers and Java retry a CONNECT
    /// with credentials on the same connection.
    private static func refuse(
        _ head: RequestHead, why: String, user: String?, draining: Bool, settings: borrowing Settings, lifecycle: inout ConnectionLifecycle
    ) -> Decision {
        let error = ProxyError.proxyAuthRequired(why)
        var record = record(for: head, number: lifecycle.nextRequest(), settings: settings)
        record.user = user
        record.fail(error)
        record.status = error.statusCode
        let keepAlive = head.isKeepAlive && !draining && !lifecycle.closeAfterExchange && !(head.isConnect && head.bytesFollowed)
            && !head.hasUpgradeField && !head.mayHaveBody
        let refusal = settings.errorAnswer(error, keepAlive: keepAlive, for: &record)
        return .refuseCredentials(refusal, record, keepAlive: keepAlive)
    }

    /// An authorized request. `started`: when its head arrived (before any credential check), for
    /// the logged durations.
    private static func start(
        _ head: RequestHead, user: String?, started: NIODeadline, draining: Bool, settings: borrowing Settings, lifecycle: inout ConnectionLifecycle
    ) -> Decision {
        let number = lifecycle.nextRequest()
        if head.isConnect {
            return startTunnel(head, user: user, started: started, number: number, settings: settings)
        }
        var record = AccessLogRecord(kind: .request, client: settings.client, method: head.methodName)
        record.user = user
        let requestIDField = identify(&record, head, number: number, settings: settings)
        let uri = head.uri
        let target: RequestTarget
        let request: OriginRequest
        do throws(ProxyError) {
            guard uri.utf8.count <= MessageFraming.maxRequestTargetLength else {
                throw ProxyError(
                    .uriTooLong,
                    "the request target is \(uri.utf8.count) bytes long; the limit is \(MessageFraming.maxRequestTargetLength)"
                )
            }
            target = try RequestTarget.parseAbsolute(uri)
            record.scheme = target.scheme.rawValue
            record.host = target.host
            record.port = target.port
            if settings.recordsEnabled && settings.logsPaths {
                record.path = String(target.pathAndQuery.utf8.prefix { $0 != UInt8(ascii: "?") }) ?? target.pathAndQuery
            }
            // Before the pool as well as the dial: a kept-alive upstream to a host a reload denied
            // is not used.
            if let (rule, position) = settings.configuration.routes.firstMatch(host: target.host), rule.action == .deny {
                throw ProxyError.routeDenied(target.host, rule: rule, position: position)
            }
            if head.passedThrough(pseudonym: settings.via.pseudonym) {
                throw ProxyError.loop(head.via.listValues("via").joined(separator: ", "))
            }
            request = try head.forOrigin(target: target, via: settings.via, requestID: requestIDField)
        } catch {
            record.fail(error)
            if record.host.isEmpty {
                (record.host, record.port, record.path) = RequestTarget.loggable(uri)
                if !(settings.recordsEnabled && settings.logsPaths) { record.path = "" }
            }
            return .refused(error, record)
        }
        if head.honoursMaxForwards && head.maxForwards == 0 {
            // RFC 9110 §7.6.2: the last recipient answers.
            record.status = 200
            let local = head.maxForwardsZeroAnswer(via: settings.via)
            let answer = settings.localAnswer(local.head, body: local.body, for: &record)
            return .answeredLocally(answer, record)
        }
        let route = UpstreamRoute.forRequest(target, configuration: settings.configuration)
        record.tls = route.tls != nil
        if !head.isKeepAlive || draining { lifecycle.closeAfterExchange = true }
        let exchange = ExchangeStateMachine(clientHead: head, target: target, route: route, request: request, record: record, started: started)
        return .exchange(exchange, route)
    }

    private static func startTunnel(_ head: RequestHead, user: String?, started: NIODeadline, number: Int, settings: borrowing Settings) -> Decision {
        var record = AccessLogRecord(kind: .tunnel, client: settings.client, method: "CONNECT")
        record.user = user
        identify(&record, head, number: number, settings: settings)
        let target: RequestTarget
        do throws(ProxyError) {
            target = try RequestTarget.parseConnectAuthority(head.uri)
            record.scheme = "tcp"
            record.host = target.host
            record.port = target.port
            let allowedPorts = settings.configuration.connectPorts
            guard allowedPorts.contains(target.port) else {
                throw ProxyError.connectPortDenied(target.port, allowed: allowedPorts)
            }
            if head.passedThrough(pseudonym: settings.via.pseudonym) {
                throw ProxyError.loop(head.via.listValues("via").joined(separator: ", "))
            }
        } catch {
            record.fail(error)
            return .refused(error, record)
        }
        return .tunnel(TunnelSwitchStateMachine(connecting: record, started: started, idleTimeout: settings.configuration.tunnelIdleTimeout), target)
    }

    /// A record for a request refused before its target was parsed.
    static func record(for head: RequestHead, number: Int, settings: borrowing Settings) -> AccessLogRecord {
        var record = AccessLogRecord(kind: head.isConnect ? .tunnel : .request, client: settings.client, method: head.methodName)
        (record.host, record.port, record.path) = RequestTarget.loggable(head.uri)
        if !(settings.recordsEnabled && settings.logsPaths) { record.path = "" }
        identify(&record, head, number: number, settings: settings)
        return record
    }

    /// The request's id, its User-Agent, HTTP version, target and (with `--access-log-referer`)
    /// Referer. Returns the `--request-id-header` field to send upstream, if one is configured.
    @discardableResult
    private static func identify(_ record: inout AccessLogRecord, _ head: RequestHead, number: Int, settings: borrowing Settings) -> (name: String, value: String)? {
        record.connectionID = settings.connectionID
        record.exchange = number
        record.httpMinor = head.minorVersion
        if settings.recordsEnabled && settings.logsPaths {
            record.requestTarget = head.uri
            if settings.configuration.accessLogReferer {
                record.logsReferer = true
                record.referer = head.firstField("referer").map(AccessLogRecord.recordedField)
            }
        }
        if let agent = head.firstField("user-agent") {
            record.userAgent = AccessLogRecord.recordedUserAgent(agent)
        }
        guard let field = settings.configuration.requestIDHeader else { return nil }
        record.clientRequestID = head.clientRequestID(field: field)
        return record.requestID.map { (field, $0) }
    }
}
