import NIOCore
import NIOHTTP1
import ProxyHTTP
import ProxyKit

/// What the client was told when NIO's HTTP/1 parser (llhttp) rejected an origin's bytes, in the
/// stack the codec replaced (the differential tests' oracle).
package enum RequestParseFailure {
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
