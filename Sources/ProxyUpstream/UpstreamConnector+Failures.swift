import ProxyKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import NIOCore
import NIOPosix
import OpenSSLTLS

/// An address whose TCP connection succeeded but whose TLS handshake failed.
struct AddressFailure: Sendable {
    var ip: String
    var error: any Error

    var tlsKind: TLSError.Kind? { (error as? TLSError)?.kind }
    var reason: String { UpstreamConnector.shortReason(error) }
}

extension UpstreamConnector {
    /// The error for a connect whose last round failed at TCP level (after `earlierFailures`, the
    /// addresses whose TLS handshake failed in earlier rounds, if any).
    static func describeConnectFailure(
        _ error: any Error,
        host: String,
        port: Int,
        tried: [SocketAddress],
        timeout: TimeAmount,
        earlierFailures: [AddressFailure] = []
    ) -> ProxyError {
        var failure = connectFailure(error, host: host, port: port, tried: tried, timeout: timeout, earlierFailures: earlierFailures)
        failure.dialed = earlierFailures.map(\.ip) + tried.compactMap(\.ipAddress).filter { ip in !earlierFailures.contains { $0.ip == ip } }
        return failure
    }

    private static func connectFailure(
        _ error: any Error, host: String, port: Int, tried: [SocketAddress], timeout: TimeAmount, earlierFailures: [AddressFailure]
    ) -> ProxyError {
        let triedText = tried.map { $0.ipAddress ?? "\($0)" }.joined(separator: ", ")
        let earlier = earlierFailures.map { "\($0.ip): \($0.reason)" }
        if let error = error as? NIOConnectionError {
            let details = earlier + error.connectionErrors.map { failure in
                "\(failure.target.ipAddress ?? "?"): \(Self.shortReason(failure.error))"
            }
            return ProxyError(
                .connectFailed,
                "cannot connect to \(host) port \(port): \(details.isEmpty ? "no address answered" : details.joined(separator: "; ")) (tried \(Self.addresses(tried.count)))",
                nextHopError: earlier.isEmpty ? Self.proxyStatus(error.connectionErrors.map(\.error)) : nil
            )
        }
        let earlierText = earlier.isEmpty ? "" : "; before that \(earlier.joined(separator: "; "))"
        if case ChannelError.connectTimeout = error {
            return ProxyError(
                .connectTimeout,
                "connecting to \(host) port \(port) timed out after \(timeout.nanoseconds / 1_000_000) ms (tried: \(triedText))\(earlierText)"
            )
        }
        return ProxyError(
            .connectFailed, "cannot connect to \(host) port \(port): \(Self.shortReason(error)) (tried: \(triedText))\(earlierText)",
            nextHopError: earlier.isEmpty ? Self.proxyStatus([error]) : nil)
    }

    /// The RFC 9209 error type when every address failed the same way: refused, or unroutable.
    static func proxyStatus(_ errors: [any Error]) -> ProxyStatus.ErrorType? {
        let codes = errors.map { ($0 as? IOError)?.errnoCode }
        guard !codes.isEmpty else { return nil }
        if codes.allSatisfy({ $0 == ECONNREFUSED }) { return .connectionRefused }
        if codes.allSatisfy({ $0 == ENETUNREACH || $0 == EHOSTUNREACH }) { return .destinationIPUnroutable }
        if codes.allSatisfy({ $0 == ETIMEDOUT }) { return .connectionTimeout }
        return nil
    }

    /// The error when every address connected but failed its TLS handshake. One reason shared by all
    /// addresses is said once: "certificate for api.example.com is not valid: hostname mismatch
    /// (tried 2 addresses)"; different reasons are listed per address.
    static func describeHandshakeFailures(_ failures: [AddressFailure], host: String, port: Int, tried: Int) -> ProxyError {
        var failure = handshakeFailure(failures, host: host, port: port, tried: tried)
        failure.dialed = failures.map(\.ip)
        return failure
    }

    private static func handshakeFailure(_ failures: [AddressFailure], host: String, port: Int, tried: Int) -> ProxyError {
        let kinds = failures.map(\.tlsKind)
        let kind: ProxyError.Kind
        if !kinds.isEmpty, kinds.allSatisfy({ $0 == .certificateInvalid }) {
            kind = .tlsCertificateInvalid
        } else if !kinds.isEmpty, kinds.allSatisfy({ $0 == .handshakeTimeout }) {
            kind = .connectTimeout
        } else {
            kind = .tlsHandshakeFailed
        }
        let reasons = failures.map(\.reason)
        let triedText = "(tried \(Self.addresses(tried)))"
        if let first = reasons.first, reasons.allSatisfy({ $0 == first }) {
            return ProxyError(kind, "\(first) \(triedText)")
        }
        let details = failures.map { "\($0.ip): \($0.reason)" }.joined(separator: "; ")
        return ProxyError(kind, "TLS with \(host) port \(port) failed on every address: \(details) \(triedText)")
    }

    static func addresses(_ count: Int) -> String {
        count == 1 ? "1 address" : "\(count) addresses"
    }

    package static func shortReason(_ error: any Error) -> String {
        if let tls = error as? TLSError { return tls.description }
        if let io = error as? IOError {
            switch io.errnoCode {
            case ECONNREFUSED: return "connection refused"
            case ECONNRESET: return "connection reset"
            case ENETUNREACH: return "network unreachable"
            case EHOSTUNREACH: return "host unreachable"
            case ETIMEDOUT: return "timed out"
            default: return "\(io)"
            }
        }
        if case ChannelError.connectTimeout = error { return "timed out" }
        return "\(error)"
    }
}
