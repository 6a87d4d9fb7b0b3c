import NIOCore

/// One side of an HTTP/1 connection as a sequence of events: heads, body slices, ends. A value
/// type the connection's handler owns and feeds its read buffer to; it consumes from the front of
/// that buffer what it has decoded (an incomplete head stays there until complete).
///
/// Requests: pipelined requests follow each other until one ends the connection's HTTP: a CONNECT
/// (its head is the last HTTP), a request that asks to upgrade (after its body), a request that
/// does not keep the connection alive (RFC 9112 §9.6: no further request is processed). Bytes after
/// those are left in the buffer, unparsed.
///
/// Responses: one response (after any 1xx) per `expectResponse`; bytes that arrive when no
/// request is outstanding are refused, so a connection is never reused with bytes that the next
/// exchange would take for its response.
package struct MessageDecoder: Sendable {
    package enum Event: Sendable {
        case head(HTTP1Head)
        /// Body bytes: a slice of the caller's buffer (no copy).
        case body(ByteBuffer)
        case end(HTTP1Trailers?)
        case needMoreBytes
        /// No more HTTP here for now: the rest of the buffer is not parsed (see `Stop`).
        case stopped(Stop)
    }

    package enum Stop: Sendable, Hashable {
        /// What follows is tunnel bytes: after a CONNECT request head, a 2xx to CONNECT, a 101.
        case tunnel
        /// A request that asked to upgrade has ended: tunnel bytes if the origin switches
        /// protocols, else `resume()` goes on with the next request.
        case upgrade
        /// The request said the connection closes after it (or was HTTP/1.0 without keep-alive).
        case close
    }

    /// How the input ended (`inputEnded()`).
    package enum InputEnd: Sendable, Hashable {
        /// Between messages.
        case clean
        /// A body delimited by the close (a response without framing fields) is complete: its end.
        case bodyEnded
        /// In the middle of a message.
        case truncated
    }

    private enum State: Sendable {
        /// Responses: no request outstanding. `afterResponse`: one has just ended.
        case idle(afterResponse: Bool)
        case head
        case contentLength(remaining: Int)
        case chunked(ChunkedDecoder)
        case untilClose
        /// The body is complete: the next event is its end.
        case bodyDone
        case stopped(Stop)
        case failed(HTTP1CodecError)
    }

    package let role: Role
    package let limits: HTTP1Limits
    private var state: State
    private var parser: HeadParser
    /// What ends the connection's HTTP after the current message ends.
    private var stopAfterMessage: Stop?

    package init(role: Role, limits: HTTP1Limits = HTTP1Limits()) {
        self.role = role
        self.limits = limits
        self.parser = HeadParser(role: role, limits: limits)
        self.state = role == .request ? .head : .idle(afterResponse: false)
    }

    /// A request went out: its response may come (responses only).
    package mutating func expectResponse(_ context: ResponseContext) {
        precondition(role == .response)
        parser.context = context
        state = .head
    }

    /// After `.stopped(.upgrade)` (the origin did not switch) or `.stopped(.tunnel)` for a refused
    /// CONNECT: what follows is HTTP again.
    package mutating func resume() {
        guard case .stopped = state else { return }
        state = role == .request ? .head : .idle(afterResponse: false)
    }

    /// The next event from the front of `buffer`. After an error every call throws it again.
    package mutating func next(_ buffer: inout ByteBuffer) throws(HTTP1CodecError) -> Event {
        switch state {
        case .failed(let error):
            throw error
        case .stopped(let stop):
            return .stopped(stop)
        case .idle(let afterResponse):
            guard buffer.readableBytes == 0 else {
                throw fail(afterResponse ? .bytesAfterResponse : .bytesWithoutRequest)
            }
            return .needMoreBytes
        case .head:
            return try nextHead(&buffer)
        case .contentLength(let remaining):
            guard buffer.readableBytes > 0 else { return .needMoreBytes }
            let count = Swift.min(remaining, buffer.readableBytes)
            let slice = buffer.readSlice(length: count)!
            state = count == remaining ? .bodyDone : .contentLength(remaining: remaining - count)
            return .body(slice)
        case .chunked(var decoder):
            let event: ChunkedDecoder.Event
            do {
                event = try decoder.next(&buffer)
            } catch {
                throw fail(error)
            }
            switch event {
            case .data(let slice):
                state = .chunked(decoder)
                return .body(slice)
            case .needMoreBytes:
                state = .chunked(decoder)
                return .needMoreBytes
            case .end(let trailers):
                state = endState()
                return .end(trailers)
            }
        case .untilClose:
            guard buffer.readableBytes > 0 else { return .needMoreBytes }
            return .body(buffer.readSlice(length: buffer.readableBytes)!)
        case .bodyDone:
            state = endState()
            return .end(nil)
        }
    }

    private mutating func nextHead(_ buffer: inout ByteBuffer) throws(HTTP1CodecError) -> Event {
        if parser.isAtStart {
            // RFC 9112 §2.2: a server SHOULD ignore at least one empty line before a request-line,
            // and MAY take a lone LF for a line's end. Before a status line (after a 1xx) llhttp
            // skips them too; they frame nothing. A CR without its LF is refused with the head.
            while let first = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) {
                if first == ByteClass.lf {
                    buffer.moveReaderIndex(forwardBy: 1)
                } else if first == ByteClass.cr, buffer.readableBytes == 1 {
                    return .needMoreBytes
                } else if first == ByteClass.cr, buffer.getInteger(at: buffer.readerIndex + 1, as: UInt8.self) == ByteClass.lf {
                    buffer.moveReaderIndex(forwardBy: 2)
                } else {
                    break
                }
            }
        }
        guard buffer.readableBytes > 0 else { return .needMoreBytes }
        let step = buffer.withUnsafeReadableBytes { parser.scan($0) }
        switch step {
        case .needMoreBytes:
            return .needMoreBytes
        case .failed(let error):
            throw fail(error)
        case .complete(let length):
            var head = parser.head
            head.bytes = buffer.readSlice(length: length)!
            parser.reset()
            startBody(of: head)
            return .head(head)
        }
    }

    /// The state after a head: its body, or straight to its end.
    private mutating func startBody(of head: HTTP1Head) {
        if head.isInterim {
            // Another head follows for the same request (RFC 9110 §15.2).
            state = .head
            return
        }
        switch role {
        case .request:
            stopAfterMessage = head.framing == .tunnel ? .tunnel : head.isUpgrade ? .upgrade : head.keepAlive ? nil : .close
        case .response:
            stopAfterMessage = head.framing == .tunnel ? .tunnel : nil
        }
        switch head.framing {
        case .none, .tunnel:
            state = .bodyDone
        case .contentLength(let length):
            state = .contentLength(remaining: length)
        case .chunked:
            state = .chunked(ChunkedDecoder(role: role, limits: limits))
        case .untilClose:
            state = .untilClose
        }
    }

    /// Where the decoder goes when the current message ends (its end event is being returned).
    private mutating func endState() -> State {
        if let stop = stopAfterMessage {
            stopAfterMessage = nil
            return .stopped(stop)
        }
        return role == .request ? .head : .idle(afterResponse: true)
    }

    private mutating func fail(_ error: HTTP1CodecError) -> HTTP1CodecError {
        state = .failed(error)
        return error
    }

    /// The peer closed its side: how that leaves the message being read.
    package mutating func inputEnded() -> InputEnd {
        switch state {
        case .untilClose:
            state = endState()
            return .bodyEnded
        case .idle, .stopped, .failed, .bodyDone:
            return .clean
        case .head:
            return parser.isAtStart ? .clean : .truncated
        case .contentLength, .chunked:
            return .truncated
        }
    }
}
