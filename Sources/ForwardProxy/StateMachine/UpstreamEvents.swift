import HTTP1Codec
import NIOCore
import ProxyAccess
import ProxyHTTP
import ProxyKit
import ProxyUpstream

/// What the connector (or the pool) says about the connection that now carries an exchange.
struct UpstreamConnectInfo {
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
    /// The connection goes to the parent proxy itself: the request is sent in absolute form.
    var parentForward: ParentForward? = nil
}

/// Why an upstream connection closed while it carried an exchange.
enum UpstreamCloseReason: Equatable {
    /// The origin closed (FIN) with no error.
    case closed
    /// A reset or another I/O error; `reason` is a short description for the client.
    case failed(reason: String)
    /// The origin broke HTTP framing (the decoder or the framing guard failed).
    case invalidResponse(reason: String)
    /// The response parsed, but its framing cannot be relayed (a transfer coding the proxy does
    /// not implement, Transfer-Encoding in an HTTP/1.0 response).
    case unrelayableResponse(reason: String)
    /// A 101 to a request that did not ask to upgrade.
    case unaskedSwitch
}

extension UpstreamCloseReason {
    /// Why the response reader refused the origin's bytes.
    init(_ refused: HTTP1CodecError) {
        if refused == .unaskedSwitch {
            self = .unaskedSwitch
        } else if refused.isUnrelayable {
            self = .unrelayableResponse(reason: refused.reason)
        } else {
            self = .invalidResponse(reason: refused.reason)
        }
    }
}

/// What happens on the upstream side of the exchange in progress.
enum UpstreamEvent {
    /// The dial for the exchange completed (the exchange may have ended meanwhile).
    case dialed
    /// A connection (dialed, or from the pool) is attached to the exchange.
    case connected(UpstreamConnectInfo)
    /// No upstream could be had (the exchange may have ended meanwhile).
    case connectFailed(ProxyError)
    /// The connection made for the exchange closed before anything was sent on it (the origin
    /// closed it as it was made; its close found no exchange to tell); `dialed`: its address.
    case closedBeforeUse(dialed: FailedAddress?)
    /// A response head: interim (1xx), the final one, or the 101 of an upgrade.
    case head(ResponseHead)
    case body(ByteBuffer)
    case end(HeaderFields?)
    /// The upstream connection closed; `dialed`: its address and the kind of failure its error
    /// says (nil when unknown).
    case closed(UpstreamCloseReason, dialed: FailedAddress?)
    /// The upstream channel can take more bytes, or no more: the client is read only while it can.
    case writabilityChanged(Bool)
}

/// What happens while a client connection becomes a tunnel.
enum TunnelEvent {
    /// The CONNECT target answered (the client may have left meanwhile).
    case connected(UpstreamConnectInfo)
    case connectFailed(ProxyError)
    /// Raw client bytes, arriving while the HTTP handlers are removed.
    case rawBytes(NIOAny)
    /// The HTTP decoders are gone (`succeeded`), or their removal failed, or a channel closed
    /// meanwhile (`!succeeded`).
    case handlersRemoved(succeeded: Bool)
    /// The glue is in place: the tunnel's recorder logs it from now on.
    case installed
    /// Installing the glue failed (a channel closed under it).
    case installFailed
}
