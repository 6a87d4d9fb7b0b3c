import Logging
import NIOCore
import ProxyAccess
import ProxyHTTP
import ProxyKit
import ProxyUpstream

// Answers the proxy writes itself (errors, local answers, 407s: the machine builds them), the
// credential check, and the response bytes the client reads: no HTTP encoder sits on the pipeline.
extension ClientConnectionHandler {
    /// Checks credentials: at once when no hash is needed, else on the authenticator's threads.
    func authenticate(_ credentials: ProxyCredentials, by authenticator: ProxyAuthenticator, context: ChannelHandlerContext) {
        if let verdict = authenticator.verdictWithoutHashing(credentials) {
            credentialsChecked(verdict)
            return
        }
        authenticator.verify(credentials, on: context.eventLoop).assumeIsolated().whenSuccess { verdict in
            guard self.context != nil else { return }
            self.credentialsChecked(verdict)
        }
    }

    func credentialsChecked(_ verdict: ProxyAuthenticator.Verdict) {
        switch verdict {
        case .allowed: break
        case .denied(let user, let reason):
            // The user name as sent (escaped, bounded), never the password.
            logger.notice("proxy authentication failed", metadata: ["user": "\(ProxyError.sanitized(user, limit: 64))", "reason": "\(reason)"])
        case .busy:
            logger.warning("proxy authentication overloaded: too many credential checks in progress")
        }
        run(machine.credentialsChecked(verdict, now: now, draining: env.isDraining))
    }

    /// Writes an error answer, logs it, and closes the connection after the write unless
    /// `keepAlive` (a 407 the client may answer on the same connection).
    func respond(_ answer: ErrorAnswer, record: AccessLogRecord, keepAlive: Bool, context: ChannelHandlerContext) {
        var body = context.channel.allocator.buffer(capacity: answer.body.utf8.count)
        body.writeString(answer.body)
        // Recorded before the answer goes out: a client that sends its next request on another
        // connection (another event loop) as soon as it reads this one must find this one first
        // in the access log and /errors.
        finished(record)
        if keepAlive {
            writeResponse(.head(answer.head), context: context)
            writeResponse(.body(body), context: context)
            context.flush()
        } else {
            writeAndClose(answer.head, body: body, context: context)
        }
        logger.debug("request failed", metadata: ["status": "\(answer.error.statusCode)", "error": "\(answer.error.shortDescription)"])
    }

    /// Writes a response the proxy gives itself, logs it, and closes after it: the request's body
    /// (if any) is not read, so the connection cannot carry another request.
    func respondLocally(_ answer: ProxyAnswer, record: AccessLogRecord, context: ChannelHandlerContext) {
        var body = context.channel.allocator.buffer(capacity: answer.body.utf8.count)
        body.writeString(answer.body)
        writeAndClose(answer.head, body: body, context: context)
        finished(record)
    }

    func writeAndClose(_ head: ResponseHead, body: ByteBuffer, context: ChannelHandlerContext) {
        writeResponse(.head(head), context: context)
        let written = context.eventLoop.makePromise(of: Void.self)
        writeResponse(.body(body), promise: written, context: context)
        context.flush()
        written.futureResult.assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    /// Writes one part of a response as bytes. `promise` completes when the part's last bytes
    /// are written (with an empty write when the part has none, so that it completes in order).
    func writeResponse(_ part: ResponsePart, promise: EventLoopPromise<Void>? = nil, context: ChannelHandlerContext) {
        let allocator = context.channel.allocator
        var last: ByteBuffer?
        switch part {
        case .head(let head):
            last = responseWriter.head(head, allocator: allocator)
        case .body(let buffer):
            responseWriter.body(buffer, allocator: allocator) { bytes in
                if let pending = last { context.write(wrapOutboundOut(pending), promise: nil) }
                last = bytes
            }
        case .end(let trailers):
            last = responseWriter.end(trailers, allocator: allocator)
        }
        if let last {
            context.write(wrapOutboundOut(last), promise: promise)
        } else if let promise {
            context.write(wrapOutboundOut(allocator.buffer(capacity: 0)), promise: promise)
        }
    }

    /// Closes once the response's last bytes are on the wire: `close` discards writes still queued
    /// behind a slow client, which would truncate a response that the origin sent completely.
    /// An empty write's promise completes after every write queued before it, so no response
    /// needs a promise of its own (one allocation per request less).
    func closeAfterLastWrite(context: ChannelHandlerContext) {
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(capacity: 0)), promise: written)
        written.futureResult.assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }
}
