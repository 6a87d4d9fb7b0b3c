import ProxyConfig
import ProxyKit

/// The netfilter rules that send a pod's outbound TCP to the transparent listener, as iptables /
/// ip6tables commands (nat table, OUTPUT; works with the nft and legacy backends alike):
///
/// - traffic to loopback, from the proxy's own uid or with its mark, and to `excluded` blocks is
///   left alone (the proxy's own connections to origins and to HTTPDNS are never redirected);
/// - TCP to `ports` is REDIRECTed to the listener's port (the listener reads SO_ORIGINAL_DST);
/// - with `blockQUIC`, outbound UDP 443 is rejected (filter table) so HTTP/3 clients fall back to
///   TCP, which is intercepted.
///
/// Every chain is removed and made again, so applying the rules twice leaves one copy.
package struct TransparentRules: Sendable, Equatable {
    package var listenerPort: Int
    package var ports: [Int]
    /// The proxy's uid (the image runs as 10001); nil: no owner match. No default: a wrong guess
    /// sends the proxy's own connections back to it.
    package var proxyUID: Int?
    /// The proxy's `--outbound-mark`; nil: no mark match.
    package var mark: UInt32?
    package var excluded: [CIDR]
    package var ipv6: Bool
    package var blockQUIC: Bool

    package static let redirectChain = "HTTPDNS_PROXY_REDIRECT"
    package static let quicChain = "HTTPDNS_PROXY_QUIC"

    package init(
        listenerPort: Int, ports: [Int] = [80, 443], proxyUID: Int?, mark: UInt32? = nil,
        excluded: [CIDR] = [], ipv6: Bool = true, blockQUIC: Bool = false
    ) {
        self.listenerPort = listenerPort
        self.ports = ports
        self.proxyUID = proxyUID
        self.mark = mark
        self.excluded = excluded
        self.ipv6 = ipv6
        self.blockQUIC = blockQUIC
    }

    /// Why these rules cannot be installed, or nil. Without a uid or a mark nothing keeps the
    /// proxy's own connections out of the redirect; uid 0 exempts every root process (an app run
    /// as root, a sidecar's shell) along with the proxy, so it needs the mark instead.
    package var problem: String? {
        if proxyUID == nil && mark == nil {
            return "give --proxy-uid (the uid the proxy runs as) or --outbound-mark (the proxy's --outbound-mark): "
                + "without either, the proxy's own connections to origins are redirected back to it"
        }
        if proxyUID == 0 && mark == nil {
            return "--proxy-uid 0 would exempt all of root's traffic, not only the proxy's: run the proxy under its own uid, "
                + "or start it with --outbound-mark and give the same --outbound-mark here (with --proxy-uid none)"
        }
        return nil
    }

    /// One command; `mayFail` ones remove what an earlier run left (absent the first time).
    package typealias Command = SetupCommand

    /// Removes the rules (also the first step of `install`).
    package var removal: [Command] {
        families.flatMap { tool in
            [
                Command(arguments: [tool, "-w", "-t", "nat", "-D", "OUTPUT", "-p", "tcp", "-j", Self.redirectChain], mayFail: true),
                Command(arguments: [tool, "-w", "-t", "nat", "-F", Self.redirectChain], mayFail: true),
                Command(arguments: [tool, "-w", "-t", "nat", "-X", Self.redirectChain], mayFail: true),
                Command(arguments: [tool, "-w", "-t", "filter", "-D", "OUTPUT", "-p", "udp", "-j", Self.quicChain], mayFail: true),
                Command(arguments: [tool, "-w", "-t", "filter", "-F", Self.quicChain], mayFail: true),
                Command(arguments: [tool, "-w", "-t", "filter", "-X", Self.quicChain], mayFail: true),
            ]
        }
    }

    /// Removal, then the chains and the jumps into them.
    package var install: [Command] {
        var commands = removal
        for tool in families {
            let v6 = tool == "ip6tables"
            func nat(_ arguments: String...) { commands.append(Command(arguments: [tool, "-w", "-t", "nat"] + arguments, mayFail: false)) }
            func filter(_ arguments: String...) { commands.append(Command(arguments: [tool, "-w", "-t", "filter"] + arguments, mayFail: false)) }
            let chain = Self.redirectChain
            nat("-N", chain)
            for exemption in exemptions(v6: v6) { commands.append(Command(arguments: [tool, "-w", "-t", "nat", "-A", chain] + exemption + ["-j", "RETURN"], mayFail: false)) }
            nat("-A", chain, "-p", "tcp", "-m", "multiport", "--dports", ports.map(String.init).joined(separator: ","),
                "-j", "REDIRECT", "--to-ports", "\(listenerPort)")
            nat("-A", "OUTPUT", "-p", "tcp", "-j", chain)
            if blockQUIC {
                let quic = Self.quicChain
                filter("-N", quic)
                for exemption in exemptions(v6: v6) { commands.append(Command(arguments: [tool, "-w", "-t", "filter", "-A", quic] + exemption + ["-j", "RETURN"], mayFail: false)) }
                filter("-A", quic, "-p", "udp", "--dport", "443", "-j", "REJECT")
                filter("-A", "OUTPUT", "-p", "udp", "-j", quic)
            }
        }
        return commands
    }

    private var families: [String] { ipv6 ? ["iptables", "ip6tables"] : ["iptables"] }

    /// What is never redirected: loopback, the proxy's own sockets, the excluded blocks.
    private func exemptions(v6: Bool) -> [[String]] {
        var rules: [[String]] = [["-o", "lo"], ["-d", v6 ? "::1/128" : "127.0.0.0/8"]]
        if let proxyUID { rules.append(["-m", "owner", "--uid-owner", "\(proxyUID)"]) }
        if let mark { rules.append(["-m", "mark", "--mark", "\(mark)"]) }
        for block in excluded where block.network.isIPv4 != v6 {
            rules.append(["-d", "\(block)"])
        }
        return rules
    }
}
