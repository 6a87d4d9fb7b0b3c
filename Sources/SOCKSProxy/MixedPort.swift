import NIOCore
import ProxyAccess
import ProxyKit

/// The decisions of the mixed port (`listen-socks`): which protocol a connection speaks, told by
/// its first byte, and what happens when no byte comes. A value type; `MixedPortHandler` does what
/// it says.
package enum MixedPort {
    /// What a connection speaks, by its first byte: SOCKS5 greets with its version 0x05, SOCKS4 and
    /// 4a with 0x04, TLS starts with a handshake record (0x16); HTTP methods are letters, and
    /// anything else is left to the HTTP codec, which answers what is not HTTP with a 400.
    package enum Speech: Equatable, Sendable {
        case http, socks5, socks4, tls

        package init(firstByte: UInt8) {
            switch firstByte {
            case 0x05: self = .socks5
            case 0x04: self = .socks4
            case 0x16: self = .tls
            default: self = .http
            }
        }
    }

    /// Where a connection goes once its protocol is known.
    package enum Route: Equatable, Sendable {
        /// The HTTP pipeline, with the admission it answers (an ACL or limit refusal as 403/503).
        case http(ClientAdmission.Verdict)
        /// The SOCKS handler, which refuses in SOCKS's own reply when not admitted.
        case socks(ClientAdmission.Verdict)
    }

    /// The route for the first byte of a connection admitted (or refused) at accept.
    package static func route(firstByte: UInt8, admission: ClientAdmission.Verdict) -> Route {
        switch Speech(firstByte: firstByte) {
        case .socks5, .socks4:
            return .socks(admission)
        case .http:
            return .http(admission)
        case .tls:
            // A refusal at accept stays the answer; otherwise the ClientHello is the problem.
            if admission.error != nil { return .http(admission) }
            return .http(.wrongProtocol(.malformed(
                "a TLS ClientHello arrived on the proxy's plain port, which speaks HTTP and SOCKS: use an http:// proxy URL (not https://)"
            )))
        }
    }

    /// What to do when no byte has come: an admitted connection is idle and waits as long as an
    /// idle HTTP connection would; a refused one waits only for the head's time, then gets the
    /// HTTP refusal (the protocol of every client that speaks first and said nothing).
    package enum Silence: Equatable, Sendable {
        case close
        case answerHTTP(ClientAdmission.Verdict)
    }

    package static func waitForFirstByte(admission: ClientAdmission.Verdict, clientIdleTimeout: TimeAmount, headerTimeout: TimeAmount) -> TimeAmount {
        admission.error == nil ? clientIdleTimeout : headerTimeout
    }

    package static func silence(admission: ClientAdmission.Verdict) -> Silence {
        admission.error == nil ? .close : .answerHTTP(admission)
    }
}
