import ProxyConfig
import ProxyAccess
import ProxyHTTP
import ProxyKit
import ProxyUpstream

extension ClientConnectionStateMachine {
    /// What the machine knows of the proxy's configuration: a snapshot, which a reload replaces
    /// when the next request starts. The answers the proxy writes itself take their fields from it.
    struct Settings {
        var configuration: ProxyConfiguration
        var via: ViaHeader
        /// The client's address as logged.
        var client: String
        /// Build records (timings, statuses) only when someone reads them: the access log or metrics.
        var recordsEnabled: Bool
        /// Checks Basic proxy credentials (`--proxy-auth`): every request must carry verified ones.
        var authenticator: ProxyAuthenticator?
        /// Records carry paths (only the access log shows them).
        var logsPaths: Bool
        /// The connection's id, the first half of its requests' ids (`RequestID`).
        var connectionID: UInt64
        /// A reload's configuration and authenticator, waiting for the next request.
        private var pendingReload: (configuration: ProxyConfiguration, authenticator: ProxyAuthenticator?)?

        init(
            configuration: ProxyConfiguration, via: ViaHeader, client: String, recordsEnabled: Bool,
            authenticator: ProxyAuthenticator? = nil, logsPaths: Bool = true, connectionID: UInt64 = 0
        ) {
            (self.configuration, self.via, self.client, self.recordsEnabled) = (configuration, via, client, recordsEnabled)
            (self.authenticator, self.logsPaths, self.connectionID) = (authenticator, logsPaths, connectionID)
        }

        /// A reload: it applies when the next request starts (`applyReload`).
        mutating func offer(configuration: ProxyConfiguration, authenticator: ProxyAuthenticator?) {
            pendingReload = (configuration, authenticator)
        }

        /// Takes a reload offered since the last request; true when there was one.
        mutating func applyReload() -> Bool {
            // Checked first: `take()` moves the whole optional (two kilobytes) even when it is nil.
            guard pendingReload != nil, let reload = pendingReload.take() else { return false }
            (configuration, authenticator) = reload
            return true
        }
    }
}

// MARK: - the proxy's own answers

extension ClientConnectionStateMachine.Settings {
    /// A short text answer saying `error`; the connection closes after it unless `keepAlive` (a
    /// 407 the client may answer on the same connection). `record` counts the bytes it sends.
    func errorAnswer(_ error: ProxyError, keepAlive: Bool, for record: inout AccessLogRecord) -> ErrorAnswer {
        let body = error.message + "\n"
        var head = ResponseHead(answering: error)
        head.addField(name: "Content-Type", value: "text/plain; charset=utf-8")
        head.addField(name: "Content-Length", value: String(body.utf8.count))
        head.addField(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        head.addField(name: "Cache-Control", value: "no-store")
        head.addField(name: "X-Proxy-Error", value: error.shortDescription)
        head.addField(name: "Proxy-Status", value: ProxyStatus.fieldValue(for: error))
        head.addField(name: "X-Content-Type-Options", value: "nosniff")
        if error.statusCode == 407, let authenticator {
            head.addField(name: "Proxy-Authenticate", value: authenticator.challenge)
        }
        if error.asksToRetryLater {
            head.addField(name: "Retry-After", value: String(ProxyError.retryAfterSeconds))
        }
        addRequestID(record.requestID, to: &head)
        record.bytesDown = body.utf8.count
        return ErrorAnswer(error: error, head: head, body: body)
    }

    /// A response the proxy gives itself; the connection closes after it (the request's body, if
    /// any, is not read). `record` counts the bytes it sends.
    func localAnswer(_ head: ResponseHead, body: String, for record: inout AccessLogRecord) -> ProxyAnswer {
        var head = head
        head.addField(name: "Content-Length", value: String(body.utf8.count))
        head.addField(name: "Connection", value: "close")
        addRequestID(record.requestID, to: &head)
        record.bytesDown = body.utf8.count
        return ProxyAnswer(head: head, body: body)
    }

    /// With `--request-id-header`, the request's id in that field of the proxy's own answers, as
    /// on forwarded ones (none for bytes that never became a request).
    private func addRequestID(_ id: String?, to head: inout ResponseHead) {
        guard let field = configuration.requestIDHeader, let id else { return }
        head.replaceOrAddField(name: field, value: id)
    }
}
