import NIOCore
import NIOEmbedded
import NIOHTTP1
import ProxyHTTP
import ProxyKit

/// Runs the llhttp stack over an input: NIOHTTP1's llhttp decoders inside ClientRequestDecoder (the
/// request side the codec replaced, kept here) and the llhttp upstream decoder the codec replaced (LegacyUpstreamResponseDecoder), on an EmbeddedChannel, read by read; then the
/// rules the proxy adds on each head: MessageRewriter's framing checks (MessageFraming), the
/// machine's 414 for a long target and its 502 for a 101 nobody asked for. Errors become
/// ProxyError kinds and texts as the machine makes them (RequestParseFailure).
package enum LegacyRunner {
    private static let target = try! RequestTarget.parseAbsolute("http://a.test/")
    private static let via = ViaHeader(pseudonym: "oracle")

    package static func requestTranscript(_ input: DifferentialInput) -> Transcript {
        let decoder = ClientRequestDecoder()
        let collector = Collector<HTTPServerRequestPart> { part in
            switch part {
            case .head(let head): .request(head)
            case .body(let body): .body(body)
            case .end(let trailers): .end(trailers)
            }
        }
        collector.onHead = { part in
            guard case .request(let head) = part else { return nil }
            if head.uri.utf8.count > MessageFraming.maxRequestTargetLength {
                return .error(kind: ProxyError.Kind.uriTooLong.description, reason: "the request target is \(head.uri.utf8.count) bytes long")
            }
            guard head.method != .CONNECT else { return nil }
            do throws(ProxyError) {
                _ = try MessageRewriter.rewriteRequest(head, target: target, via: via)
            } catch {
                return .error(kind: error.kind.description, reason: error.message)
            }
            return nil
        }
        collector.stopAfterEnd = { part in
            guard case .request(let head) = part else { return nil }
            if head.method == .CONNECT { return "tunnel" }
            let connection = head.headers[canonicalForm: "connection"].map { $0.lowercased() }
            if head.headers.contains(name: "upgrade") && connection.contains("upgrade") { return "upgrade" }
            return head.isKeepAlive ? nil : "close"
        }
        collector.mapError = { [unowned collector] error in
            switch error {
            case HTTPParserError.invalidEOFState: return .truncated
            case HTTPParserError.closedConnection where collector.closed: return .stopped("close")
            case let parserError as HTTPParserError:
                let proxyError = RequestParseFailure.proxyError(for: parserError, requestLineLength: decoder.requestLineLength)
                return .error(kind: proxyError.kind.description, reason: proxyError.message)
            default:
                return .error(kind: "other", reason: "\(error)")
            }
        }
        return run(input, decoder: ByteToMessageHandler(decoder), collector: collector)
    }

    package static func responseTranscript(_ input: DifferentialInput) -> Transcript {
        let decoder = LegacyUpstreamResponseDecoder()
        let collector = Collector<HTTPClientResponsePart> { part in
            switch part {
            case .head(let head): .response(head)
            case .body(let body): .body(body)
            case .end(let trailers): .end(trailers)
            }
        }
        let method = HTTPMethod(rawValue: input.method.rawValue)
        collector.onHead = { part in
            guard case .response(let head) = part else { return nil }
            let code = head.status.code
            if code == 101 && !input.upgradeRequested {
                return .error(kind: ProxyError.Kind.invalidResponse.description, reason: "switched protocols (101) without being asked to")
            }
            guard code >= 200 || code == 101 else { return nil }
            do throws(ProxyError) {
                _ = try MessageRewriter.rewriteResponse(
                    head, requestMethod: method, clientVersion: .http1_1, clientKeepAlive: true,
                    isUpgradeResponse: code == 101, via: via
                )
            } catch {
                return .error(kind: error.kind.description, reason: error.message)
            }
            return nil
        }
        collector.stopAfterEnd = { part in
            guard case .response(let head) = part else { return nil }
            if head.status.code == 101 || (input.method == .CONNECT && (200..<300).contains(head.status.code)) { return "tunnel" }
            return nil
        }
        collector.onFinalEnd = { decoder.responseEnded() }
        collector.mapError = { error in
            if case HTTPParserError.invalidEOFState = error { return .truncated }
            guard let reason = RequestParseFailure.invalidResponseReason(error) else {
                return .error(kind: "other", reason: "\(error)")
            }
            return .error(kind: ProxyError.Kind.invalidResponse.description, reason: reason)
        }
        decoder.requestSent(HTTPRequestHead(version: .http1_1, method: method, uri: "/"))
        return run(input, decoder: ByteToMessageHandler(decoder), collector: collector)
    }

    private static func run<In>(_ input: DifferentialInput, decoder: some ChannelHandler, collector: Collector<In>) -> Transcript {
        let channel = EmbeddedChannel()
        try! channel.pipeline.syncOperations.addHandler(decoder)
        try! channel.pipeline.syncOperations.addHandler(collector)
        for read in input.reads where collector.transcript.outcome == .clean && !collector.done {
            _ = try? channel.writeInbound(ByteBuffer(bytes: read))
        }
        // The end of input (decodeLast with EOF), and the pipeline's handlers released.
        _ = try? channel.finish()
        var transcript = collector.transcript
        if let stop = collector.pendingStop, transcript.outcome == .clean {
            transcript.outcome = .stopped(stop)
        }
        return transcript
    }

    enum Part {
        case request(HTTPRequestHead)
        case response(HTTPResponseHead)
        case body(ByteBuffer)
        case end(HTTPHeaders?)
    }

    /// Turns the decoder's parts into a transcript, applying the proxy's rules on each head.
    final class Collector<In>: ChannelInboundHandler {
        typealias InboundIn = In

        var transcript = Transcript()
        let convert: (In) -> Part
        /// A rule the proxy applies to a head: the outcome that refuses it, or nil.
        var onHead: (Part) -> Transcript.Outcome? = { _ in nil }
        /// What stops HTTP after this message ends, if anything.
        var stopAfterEnd: (Part) -> String? = { _ in nil }
        var onFinalEnd: () -> Void = {}
        var mapError: (any Error) -> Transcript.Outcome = { .error(kind: "other", reason: "\($0)") }
        private var currentHead: Part?
        /// The last message ended and said the connection closes.
        var closed = false
        /// The decoding is over (stopped or refused): later parts are ignored.
        var done = false
        var pendingStop: String?

        init(_ convert: @escaping (In) -> Part) {
            self.convert = convert
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard !done else { return }
            let part = convert(unwrapInboundIn(data))
            switch part {
            case .request, .response:
                if let refusal = onHead(part) {
                    transcript.outcome = refusal
                    done = true
                    return
                }
                var message = Transcript.Message()
                switch part {
                case .request(let head):
                    // NIO spells llhttp's M-SEARCH without its hyphen.
                    message.method = head.method == .MSEARCH ? "M-SEARCH" : head.method.rawValue
                    message.target = head.uri
                    message.minorVersion = head.version.minor
                    message.fields = Self.lines(head.headers)
                case .response(let head):
                    message.status = Int(head.status.code)
                    message.minorVersion = head.version.minor
                    message.fields = Self.lines(head.headers)
                default:
                    break
                }
                transcript.messages.append(message)
                currentHead = part
                if case .response(let head) = part, head.status.code == 101 || stopAfterEnd(part) == "tunnel" {
                    // NIO stops parsing after a 101 head and delivers no end for it (the codec
                    // does, then stops): the stop is what both report.
                    transcript.messages[transcript.messages.count - 1].ended = true
                    pendingStop = "tunnel"
                    done = true
                }
            case .body(let body):
                transcript.messages[transcript.messages.count - 1].body += body.readableBytesView
            case .end(let trailers):
                transcript.messages[transcript.messages.count - 1].ended = true
                transcript.messages[transcript.messages.count - 1].trailers = trailers.map(Self.lines)
                if let head = currentHead, let stop = stopAfterEnd(head) {
                    if stop == "close" {
                        closed = true
                        pendingStop = "close"
                    } else {
                        pendingStop = stop
                        done = true
                    }
                }
                if case .response = currentHead { onFinalEnd() }
            }
        }

        /// llhttp keeps the spaces after a value; a field value has none (RFC 9110 §5.5): a
        /// representation difference, not a verdict.
        static func lines(_ headers: HTTPHeaders) -> [String] {
            headers.map { name, value in
                var trimmed = Substring(value)
                while let last = trimmed.last, last == " " || last == "\t" { trimmed.removeLast() }
                return "\(name): \(trimmed)"
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            guard !done, transcript.outcome == .clean else { return }
            transcript.outcome = mapError(error)
            if transcript.outcome == .stopped("close") { pendingStop = nil }
            done = true
        }
    }
}
