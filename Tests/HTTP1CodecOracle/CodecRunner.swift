import HTTP1Codec
import NIOCore

/// Runs the new codec over an input, read by read, as a connection handler would: bytes are
/// appended to one buffer and events taken until the decoder needs more.
package enum CodecRunner {
    package static func transcript(_ input: DifferentialInput, role: Role, limits: HTTP1Limits = HTTP1Limits()) -> Transcript {
        var decoder = MessageDecoder(role: role, limits: limits)
        if role == .response {
            decoder.expectResponse(ResponseContext(method: methodKind(input.method), upgradeRequested: input.upgradeRequested))
        }
        var transcript = Transcript()
        var buffer = ByteBuffer()
        reading: for read in input.reads {
            buffer.writeBytes(read)
            while true {
                let event: MessageDecoder.Event
                do {
                    event = try decoder.next(&buffer)
                } catch {
                    transcript.outcome = .error(kind: error.kind.rawValue, reason: error.reason)
                    return transcript
                }
                switch event {
                case .head(let head):
                    transcript.messages.append(message(head))
                case .body(let slice):
                    transcript.messages[transcript.messages.count - 1].body += slice.readableBytesView
                case .end(let trailers):
                    transcript.messages[transcript.messages.count - 1].ended = true
                    transcript.messages[transcript.messages.count - 1].trailers = trailers.map { lines($0.fieldList) }
                case .needMoreBytes:
                    continue reading
                case .stopped(let stop):
                    transcript.outcome = .stopped("\(stop)")
                    return transcript
                }
            }
        }
        switch decoder.inputEnded() {
        case .clean:
            transcript.outcome = .clean
        case .truncated:
            transcript.outcome = .truncated
        case .bodyEnded:
            transcript.messages[transcript.messages.count - 1].ended = true
            transcript.outcome = .clean
        }
        return transcript
    }

    static func message(_ head: HTTP1Head) -> Transcript.Message {
        var message = Transcript.Message()
        message.minorVersion = head.minorVersion
        if head.role == .request {
            message.method = head.methodString
            message.target = head.targetString
        } else {
            message.status = head.status
        }
        message.fields = lines(head.fieldList)
        return message
    }

    static func lines(_ pairs: [(String, String)]) -> [String] {
        pairs.map { "\($0.0): \($0.1)" }
    }

    static func methodKind(_ method: DifferentialInput.Method) -> MethodKind {
        switch method {
        case .GET: .get
        case .HEAD: .head
        case .CONNECT: .connect
        case .POST: .post
        }
    }
}
