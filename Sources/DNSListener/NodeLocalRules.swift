import ProxyConfig
import ProxyKit

/// What a node needs before the DNS listener can serve as its NodeLocal DNS cache, the way
/// Kubernetes' node-local-dns (node-cache) sets it up, as `ip` and iptables/ip6tables commands:
///
/// - a dummy interface (`nodelocaldns`) holding the link-local address(es) the pods' resolv.conf
///   names (169.254.20.10), so queries sent to it from any pod of the node are delivered locally
///   and no Service, kube-proxy rule or other node is involved;
/// - connection tracking off (raw table, NOTRACK) for DNS to and from those addresses, in
///   PREROUTING (pods) and OUTPUT (host-network clients, and the answers): at a node's query rate
///   every UDP query would otherwise take a conntrack entry, the table fills and DNS fails (the
///   kernel race node-local-dns was made to avoid);
/// - ACCEPT for that traffic at the head of the filter table's INPUT and OUTPUT, ahead of a host
///   firewall that drops by default.
///
/// The DNS listener binds the address(es) itself (`dns-listen: 169.254.20.10:53`). Cluster names
/// go upstream through `dns-forward-zone cluster.local=KUBE-DNS-IP:53` (the Service's ClusterIP:
/// these rules do not touch it, so nothing loops back to the listener).
/// Every chain is removed and made again, so applying the rules twice leaves one copy.
package struct NodeLocalRules: Sendable, Equatable {
    package var interface: String
    package var addresses: [IPAddress]
    package var port: Int

    package static let defaultInterface = "nodelocaldns"
    package static let defaultAddress = "169.254.20.10"
    package static let notrackChain = "HTTPDNS_PROXY_NODELOCAL"
    package static let acceptChain = "HTTPDNS_PROXY_NODELOCAL_OK"

    package init(interface: String = Self.defaultInterface, addresses: [IPAddress], port: Int = 53) {
        self.interface = interface
        self.addresses = addresses
        self.port = port
    }

    /// Why these rules cannot be installed, or nil.
    package var problem: String? {
        if addresses.isEmpty { return "give at least one --address" }
        if !(1...65535).contains(port) { return "--port must be 1...65535" }
        // IFNAMSIZ is 16 with the NUL; `ip` refuses what the kernel would.
        if interface.isEmpty || interface.utf8.count > 15
            || !interface.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: ":") })
        {
            return "--interface must be 1 to 15 printable characters without '/', ':' or spaces"
        }
        if let loopback = addresses.first(where: \.isLoopback) {
            return "--address \(loopback) is a loopback address: pods cannot reach it"
        }
        return nil
    }

    /// Removes the rules, the addresses and the interface if it is a dummy one (also the first
    /// step of `install`, without the addresses and the interface). An existing interface of
    /// another kind that was given (`lo` on a kernel without dummy interfaces) stays.
    package var removal: [SetupCommand] {
        ruleRemoval
            + addresses.map { SetupCommand(arguments: ["ip", "addr", "del", prefixed($0), "dev", interface], mayFail: true) }
            + [SetupCommand(arguments: ["ip", "link", "del", interface, "type", "dummy"], mayFail: true)]
    }

    private func prefixed(_ address: IPAddress) -> String { "\(address)/\(address.isIPv4 ? 32 : 128)" }

    /// The interface and its addresses, then the chains and the jumps into them.
    package var install: [SetupCommand] {
        var commands = ruleRemoval
        // An interface that exists (left by an earlier run, or given: `lo`) is kept (add fails)
        // and its addresses replaced; one that neither exists nor can be made fails at `up`.
        commands.append(SetupCommand(arguments: ["ip", "link", "add", interface, "type", "dummy"], mayFail: true))
        commands.append(SetupCommand(arguments: ["ip", "link", "set", interface, "up"], mayFail: false))
        for address in addresses {
            commands.append(SetupCommand(arguments: ["ip", "addr", "replace", prefixed(address), "dev", interface], mayFail: false))
        }
        for (tool, family) in families {
            func add(_ table: String, _ arguments: [String]) {
                commands.append(SetupCommand(arguments: [tool, "-w", "-t", table] + arguments, mayFail: false))
            }
            add("raw", ["-N", Self.notrackChain])
            add("filter", ["-N", Self.acceptChain])
            for address in family {
                for proto in ["udp", "tcp"] {
                    let toListener = ["-d", "\(address)", "-p", proto, "--dport", "\(port)"]
                    let fromListener = ["-s", "\(address)", "-p", proto, "--sport", "\(port)"]
                    for match in [toListener, fromListener] {
                        add("raw", ["-A", Self.notrackChain] + match + ["-j", "NOTRACK"])
                        add("filter", ["-A", Self.acceptChain] + match + ["-j", "ACCEPT"])
                    }
                }
            }
            add("raw", ["-I", "PREROUTING", "1", "-j", Self.notrackChain])
            add("raw", ["-I", "OUTPUT", "1", "-j", Self.notrackChain])
            add("filter", ["-I", "INPUT", "1", "-j", Self.acceptChain])
            add("filter", ["-I", "OUTPUT", "1", "-j", Self.acceptChain])
        }
        return commands
    }

    private var ruleRemoval: [SetupCommand] {
        families.flatMap { tool, _ in
            [("raw", "PREROUTING", Self.notrackChain), ("raw", "OUTPUT", Self.notrackChain),
             ("filter", "INPUT", Self.acceptChain), ("filter", "OUTPUT", Self.acceptChain)].map { table, chain, target in
                SetupCommand(arguments: [tool, "-w", "-t", table, "-D", chain, "-j", target], mayFail: true)
            } + [("raw", Self.notrackChain), ("filter", Self.acceptChain)].flatMap { table, chain in
                [SetupCommand(arguments: [tool, "-w", "-t", table, "-F", chain], mayFail: true),
                 SetupCommand(arguments: [tool, "-w", "-t", table, "-X", chain], mayFail: true)]
            }
        }
    }

    /// iptables for the IPv4 addresses, ip6tables for the IPv6 ones; a family without an address
    /// gets no rules.
    private var families: [(tool: String, addresses: [IPAddress])] {
        let v4 = addresses.filter(\.isIPv4)
        let v6 = addresses.filter { !$0.isIPv4 }
        return (v4.isEmpty ? [] : [("iptables", v4)]) + (v6.isEmpty ? [] : [("ip6tables", v6)])
    }
}
