/// The one error type of the OpenSSL TLS client and server.
///
/// `shortDescription` is a fixed, bounded string (never a host name): safe as a metric label.
/// `description` is for humans and names the host and the reason.
public struct TLSError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, without any detail.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Base: Sendable, Hashable {
            case certificateInvalid
            case handshakeFailed
            case handshakeTimeout
            case protocolError
            case closedDuringHandshake
            case io
            case configuration
        }

        private let base: Base

        private init(_ base: Base) { self.base = base }

        /// The peer certificate failed verification (chain, validity, host name or SPKI pin).
        public static let certificateInvalid = Kind(.certificateInvalid)
        /// The handshake failed for a reason other than the certificate (alert, no common protocol...).
        public static let handshakeFailed = Kind(.handshakeFailed)
        /// The handshake did not complete within `TLSClientConfiguration.handshakeTimeout`.
        public static let handshakeTimeout = Kind(.handshakeTimeout)
        /// A TLS error after the handshake (bad record, decryption failure...).
        public static let protocolError = Kind(.protocolError)
        /// The TCP connection closed before the handshake completed.
        public static let closedDuringHandshake = Kind(.closedDuringHandshake)
        /// OpenSSL could not allocate or move bytes through its memory BIOs.
        public static let io = Kind(.io)
        /// The configuration could not be applied (unreadable CA file, bad ALPN name, a key that does not match its certificate...).
        public static let configuration = Kind(.configuration)

        /// A bounded snake_case label.
        public var description: String {
            switch self.base {
            case .certificateInvalid: "certificate_invalid"
            case .handshakeFailed: "handshake_failed"
            case .handshakeTimeout: "handshake_timeout"
            case .protocolError: "protocol_error"
            case .closedDuringHandshake: "closed_during_handshake"
            case .io: "io"
            case .configuration: "configuration"
            }
        }
    }

    /// What went wrong.
    public let kind: Kind
    /// The name (or IP literal) the TLS session was for; empty for configuration errors.
    public let host: String
    /// OpenSSL's reason, e.g. "hostname mismatch", "certificate has expired", "pin mismatch".
    public let reason: String

    public init(kind: Kind, host: String, reason: String) {
        self.kind = kind
        self.host = host
        self.reason = reason
    }

    /// Label-safe: `tls_` followed by the kind, never the host or reason.
    public var shortDescription: String { "tls_\(self.kind)" }

    public var description: String {
        switch self.kind {
        case .certificateInvalid:
            "certificate for \(self.host) is not valid: \(self.reason)"
        case .handshakeFailed:
            "TLS handshake with \(self.host) failed: \(self.reason)"
        case .handshakeTimeout:
            "TLS handshake with \(self.host) timed out: \(self.reason)"
        case .protocolError:
            "TLS protocol error on the connection to \(self.host): \(self.reason)"
        case .closedDuringHandshake:
            "connection to \(self.host) closed during the TLS handshake: \(self.reason)"
        case .configuration:
            "invalid TLS configuration: \(self.reason)"
        default:
            "TLS I/O error on the connection to \(self.host): \(self.reason)"
        }
    }
}

extension TLSError {
    public static func certificateInvalid(host: String, reason: String) -> TLSError {
        TLSError(kind: .certificateInvalid, host: host, reason: reason)
    }

    public static func handshakeFailed(host: String, reason: String) -> TLSError {
        TLSError(kind: .handshakeFailed, host: host, reason: reason)
    }

    public static func handshakeTimeout(host: String, after timeout: Duration) -> TLSError {
        TLSError(kind: .handshakeTimeout, host: host, reason: "no handshake after \(timeout)")
    }

    public static func protocolError(host: String, reason: String) -> TLSError {
        TLSError(kind: .protocolError, host: host, reason: reason)
    }

    public static func closedDuringHandshake(host: String, reason: String = "peer closed the connection") -> TLSError {
        TLSError(kind: .closedDuringHandshake, host: host, reason: reason)
    }

    public static func io(host: String, reason: String) -> TLSError {
        TLSError(kind: .io, host: host, reason: reason)
    }

    public static func configuration(reason: String) -> TLSError {
        TLSError(kind: .configuration, host: "", reason: reason)
    }
}
