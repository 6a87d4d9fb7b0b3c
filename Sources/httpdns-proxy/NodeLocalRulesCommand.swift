import ArgumentParser
import DNSListener
import ProxyConfig

/// `httpdns-proxy nodelocal-rules`: prints, or with --apply makes, what a node needs before the DNS
/// listener serves as its NodeLocal DNS cache: a dummy interface with the link-local address and
/// the NOTRACK/ACCEPT rules for DNS to and from it (see docs/deployment.md). Run in the node's
/// network namespace with CAP_NET_ADMIN (an init container of a hostNetwork DaemonSet).
struct NodeLocalRulesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nodelocal-rules",
        abstract: "Print (or with --apply make) the dummy interface and the no-conntrack rules of a NodeLocal DNS cache.",
        discussion: """
            Adds the dummy interface --interface (default nodelocaldns) holding each --address \
            (default 169.254.20.10; IPv6 too), and iptables/ip6tables rules that keep DNS to and \
            from those addresses on --port (default 53) out of connection tracking (raw table, \
            NOTRACK) and accept it ahead of a host firewall (filter table). Serve with \
            --dns-listen ADDRESS:PORT. Applying twice leaves one copy; --remove takes the rules \
            and the interface away. Needs iproute2, iptables (nft or legacy) and CAP_NET_ADMIN.
            """
    )

    @Option(help: "A link-local address the pods' resolv.conf names (repeatable, or comma-separated)")
    var address: [String] = [NodeLocalRules.defaultAddress]

    @Option(help: "The dummy interface that holds the addresses")
    var interface: String = NodeLocalRules.defaultInterface

    @Option(help: "The DNS listener's port")
    var port: Int = 53

    @Flag(help: "Run the commands instead of printing them")
    var apply = false

    @Flag(help: "Remove the rules and the interface instead of making them")
    var remove = false

    func rules() throws -> NodeLocalRules {
        var addresses: [IPAddress] = []
        for item in address.flatMap({ $0.split(separator: ",").map(String.init) }) {
            do {
                addresses.append(try IPAddress(text: item.trimmed))
            } catch {
                throw ValidationError("--address \(item): \(error)")
            }
        }
        let rules = NodeLocalRules(interface: interface, addresses: addresses, port: port)
        if let problem = rules.problem { throw ValidationError(problem) }
        return rules
    }

    func run() throws {
        let rules = try rules()
        let commands = remove ? rules.removal : rules.install
        guard apply else { return SetupCommandRunner.print(commands, subcommand: "nodelocal-rules") }
        try SetupCommandRunner.run(commands)
        StandardError.write("nodelocal-rules: \(remove ? "removed" : "installed") (\(commands.filter { !$0.mayFail }.count) commands)\n")
    }
}
