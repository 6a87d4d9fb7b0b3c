import HTTPDNS
import NIOCore
import ProxyKit

/// Where an answer of the DNS listener came from, as the query log says it.
enum DNSAnswerSource: String, Sendable {
    /// The HTTPDNS cache, fresh (or a cached negative answer).
    case cache
    /// The HTTPDNS cache past its TTL (a refresh is under way).
    case stale
    /// An HTTPDNS query made for this question.
    case httpdns
    /// The upstream resolvers (`dns-upstream`, a zone's own).
    case forward
    /// The cache of forwarded answers.
    case forwardCache = "forward-cache"
    /// A forwarded answer past its TTL, because no upstream answered (RFC 8767).
    case forwardStale = "forward-stale"
    /// The hosts file (`--hosts-file`).
    case local
    /// Not served: the client ACL or the rate limit.
    case refused
}

/// Who asked, how, and since when (for the query log).
struct Asked: Sendable {
    var client: SocketAddress?
    var transport: DNSResponder.Transport
    var started: NIODeadline
}

/// `dns-query-log` (dnsmasq's log-queries, CoreDNS's log): one JSON line per answer, written like
/// the access log (buffered per event loop, reopened with it on SIGUSR1/SIGHUP).
package struct DNSQueryLog: Sendable {
    package let writer: AccessLogWriter

    package init(writer: AccessLogWriter) {
        self.writer = writer
    }

    func record(_ query: DNSQuery, answer: [UInt8], source: DNSAnswerSource, asked: Asked) {
        let rcode = answer.count >= 4 ? Int(answer[3] & 0x0F) : -1
        let answers = answer.count >= 8 ? Int(answer[6]) << 8 | Int(answer[7]) : 0
        let elapsed = NIODeadline.now() - asked.started
        writer.writeJSON { line in
            line.string("client", asked.client?.endpointText)
            line.string("transport", asked.transport == .udp ? "udp" : "tcp")
            line.string("name", query.name)
            line.string("type", DNSTypeNames.name(of: query.type))
            line.string("rcode", DNSTypeNames.rcode(rcode))
            line.number("answers", answers)
            line.string("source", source.rawValue)
            line.milliseconds("ms", Double(elapsed.nanoseconds) / 1_000_000)
        }
    }
}

/// Query types and RCODEs by their mnemonics (RFC 1035, 3596, 2782, 9460), numbers otherwise.
enum DNSTypeNames {
    static func name(of type: UInt16) -> String {
        switch type {
        case 1: "A"
        case 2: "NS"
        case 5: "CNAME"
        case 6: "SOA"
        case 12: "PTR"
        case 15: "MX"
        case 16: "TXT"
        case 28: "AAAA"
        case 33: "SRV"
        case 64: "SVCB"
        case 65: "HTTPS"
        case 255: "ANY"
        default: "TYPE\(type)"
        }
    }

    static func rcode(_ code: Int) -> String {
        switch code {
        case 0: "NOERROR"
        case 1: "FORMERR"
        case 2: "SERVFAIL"
        case 3: "NXDOMAIN"
        case 4: "NOTIMP"
        case 5: "REFUSED"
        default: "RCODE\(code)"
        }
    }
}
