import NIOCore
import ProxyConfig
import ProxyUpstream

/// The decisions of a transparent connection, as pure functions of what is known: first what its
/// first bytes ask for, then, once the name is resolved, where it goes.
package enum TransparentPlan {
    package enum Step: Equatable {
        /// More bytes may still come before the deadline (`TransparentPeekClock`).
        case wait
        /// Resolve the SNI name (`http` false) or the Host name (`http` true) through HTTPDNS.
        case resolve(name: String, http: Bool)
        /// No name: relay to the original destination as is.
        case relayOriginal
        /// Close (a hello still incomplete at its deadline, `--transparent-fallback refuse`).
        case refuse
    }

    /// What to do after a peek the bytes decided (anything but `.needMore`, which waits on the
    /// clock), and the outcome to count.
    static func step(decided peek: TransparentPeek) -> (Step, TransparentStats.Peek?) {
        switch peek {
        case .needMore: return (.wait, nil)
        case .tls(let name?): return (.resolve(name: name, http: false), .tls)
        case .tls(nil): return (.relayOriginal, .tlsNoSNI)
        case .http(let host?): return (.resolve(name: host, http: true), .http)
        case .http(nil): return (.relayOriginal, .httpNoHost)
        case .unknown: return (.relayOriginal, .unknown)
        case .malformed: return (.relayOriginal, .malformed)
        case .tooLarge: return (.relayOriginal, .tooLarge)
        }
    }

    enum Route: Equatable {
        /// Relay the bytes to the name's HTTPDNS addresses, original port.
        case relayByName
        /// Hand the connection to the HTTP pipeline (each request by its own Host).
        case http
        /// Relay to the original destination (HTTPDNS had no answer).
        case original
        /// Close (HTTPDNS had no answer, `--transparent-fallback refuse`).
        case refuse
    }

    /// Where a connection whose name resolved to `resolution` (nil: no answer) goes, and whether
    /// its original destination is none of the HTTPDNS addresses (a hijacked or stale local answer).
    /// A system DNS answer given in HTTPDNS's place (`system_fallback`) counts as no answer: the
    /// client already had its own.
    static func route(
        resolution: Resolution?, original: SocketAddress, http: Bool, fallback: TransparentFallback
    ) -> (route: Route, hijack: Bool) {
        guard let resolution, resolution.source != .fallback, !resolution.addresses.isEmpty else {
            return (fallback == .original ? .original : .refuse, false)
        }
        let fromHTTPDNS = [.httpdns, .cache, .stale].contains(resolution.source)
        let dialed = IPAddress(original).map { $0.unmappedIPv4 ?? $0 }
        let known = resolution.addresses.contains { address in
            IPAddress(address).map { $0.unmappedIPv4 ?? $0 } == dialed
        }
        return (http ? .http : .relayByName, fromHTTPDNS && !known)
    }
}
