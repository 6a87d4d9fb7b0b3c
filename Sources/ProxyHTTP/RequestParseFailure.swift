import NIOCore
import NIOHTTP1
import ProxyKit

/// What the client or the origin is told when NIO's HTTP/1 parser (llhttp) rejects their bytes.
package enum RequestParseFailure {
    /// The answer to a request the parser rejected. Every such answer closes the connection: after
    /// a parse error nothing that follows on it can be framed reliably.
    package static func proxyError(for error: HTTPParserError, requestLineLength: Int) -> ProxyError {
        switch error {
        case .headerOverflow:
            if requestLineLength > MessageFraming.maxRequestTargetLength {
                return ProxyError(
                    .uriTooLong,
                    "the request line is \(requestLineLength) bytes or more; the limit for the target is \(MessageFraming.maxRequestTargetLength)"
                )
            }
            return ProxyError(
                .headersTooLarge,
                "request headers are too large (at most \(MessageFraming.maxRequestFieldCount) fields and \(MessageFraming.maxHeadBytes) bytes)"
            )
        case .unknown:
            // llhttp's HPE_INVALID_TRANSFER_ENCODING and HPE_CR_EXPECTED land here.
            return .malformed(
                "invalid framing: Transfer-Encoding must end in chunked (RFC 9112 §6.3), and lines must end in CRLF"
            )
        case .unexpectedContentLength:
            return .malformed("Content-Length is not allowed here (duplicate, or together with Transfer-Encoding)")
        case .invalidContentLength:
            return .malformed("invalid Content-Length")
        case .invalidChunkSize:
            return .malformed("invalid chunk size in the chunked body")
        case .invalidHeaderToken:
            return .malformed("invalid header field (name, value or line folding)")
        case .lfExpected, .strictModeAssertion, .invalidConstant:
            return .malformed("invalid line ending or framing (lines must end in CRLF)")
        case .invalidMethod:
            return .malformed("invalid method")
        case .invalidURL:
            return .malformed("invalid request target")
        case .invalidVersion:
            return .malformed("invalid HTTP version")
        default:
            return .malformed("the request could not be parsed (\(error))")
        }
    }

    /// A label for an upstream connection error that means the origin broke HTTP framing, or nil
    /// for other errors (resets and the like).
    package static func invalidResponseReason(_ error: any Error) -> String? {
        switch error {
        case HTTPParserError.headerOverflow:
            return "response head too large (at most \(MessageFraming.maxResponseFieldCount) fields and \(MessageFraming.maxHeadBytes) bytes)"
        case let parserError as HTTPParserError:
            return "unparseable response (\(parserError))"
        case let framing as UpstreamFramingError:
            return framing.description
        case is NIOHTTPDecoderError:
            return "a response nobody asked for"
        default:
            return nil
        }
    }
}
