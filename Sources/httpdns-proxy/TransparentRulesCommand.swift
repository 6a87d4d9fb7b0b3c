import ArgumentParser
import ProxyConfig
import TransparentProxy

/// `httpdns-proxy transparent-rules`: prints, or with --apply installs, the netfilter rules that
/// send a pod's outbound TCP to `--transparent-listen` (see docs/deployment.md). Run in the pod's
/// network namespace with CAP_NET_ADMIN (an init container), before the app starts.
struct TransparentRulesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "transparent-rules",
        abstract: "Print (or with --apply install) the iptables rules redirecting outbound TCP to the transparent listener.",
        discussion: """
            Redirects outbound TCP to --ports (default 80,443) to the transparent listener's port, \
            except traffic to loopback, from --proxy-uid, with --outbound-mark and to --exclude-cidr \
            blocks; IPv4 and (unless --ipv6 false) IPv6. --proxy-uid or --outbound-mark is required \
            (there is no default: the proxy's own connections must be exempt); --proxy-uid 0 only \
            with --outbound-mark. Applying twice leaves one copy; --remove takes the rules away. \
            Needs iptables/ip6tables (nft or legacy) and CAP_NET_ADMIN.
            """
    )

    @Option(name: .customLong("listener-port"), help: "The transparent listener's port (--transparent-listen)")
    var listenerPort: Int = 15001

    @Option(help: "Destination TCP ports to redirect, comma-separated")
    var ports: String = "80,443"

    @Option(name: .customLong("proxy-uid"), help: "The uid the proxy runs as, whose traffic is never redirected (the image: 10001; 'none': no owner match); this or --outbound-mark is required")
    var proxyUID: String?

    @Option(name: .customLong("outbound-mark"), help: "The proxy's --outbound-mark, whose traffic is never redirected (decimal or 0x hex)")
    var outboundMark: String?

    @Option(name: .customLong("exclude-cidr"), help: "Destinations never redirected (CIDR; repeatable, or comma-separated)")
    var excludeCIDR: [String] = []

    @Option(help: "Also write the IPv6 rules (ip6tables)")
    var ipv6: Bool = true

    @Flag(name: .customLong("drop-quic"), help: "Reject outbound UDP 443, so HTTP/3 (QUIC) clients fall back to TCP, which is redirected")
    var dropQUIC = false

    @Flag(help: "Run the commands instead of printing them")
    var apply = false

    @Flag(help: "Remove the rules instead of installing them")
    var remove = false

    func rules() throws -> TransparentRules {
        guard (1...65535).contains(listenerPort) else { throw ValidationError("--listener-port must be 1...65535") }
        let portList: [Int]
        do {
            portList = try ConfigOption.portList(ports)
        } catch {
            throw ValidationError("--ports: \(error)")
        }
        var uid: Int?
        if let proxyUID, proxyUID != "none" {
            guard let value = Int(proxyUID), value >= 0 else { throw ValidationError("--proxy-uid must be a uid number or 'none'") }
            uid = value
        }
        var mark: UInt32?
        if let outboundMark {
            do {
                mark = try ConfigOption.mark(outboundMark)
            } catch {
                throw ValidationError("--outbound-mark: \(error)")
            }
        }
        var excluded: [CIDR] = []
        for item in excludeCIDR.flatMap({ $0.split(separator: ",").map(String.init) }) {
            do {
                excluded.append(try CIDR(parsing: item.trimmed))
            } catch {
                throw ValidationError("--exclude-cidr \(item): \(error)")
            }
        }
        let rules = TransparentRules(
            listenerPort: listenerPort, ports: portList, proxyUID: uid, mark: mark, excluded: excluded, ipv6: ipv6, blockQUIC: dropQUIC)
        // Removal needs no exemption: it deletes the chains whatever they held.
        if !remove, let problem = rules.problem { throw ValidationError(problem) }
        return rules
    }

    func run() throws {
        let rules = try rules()
        let commands = remove ? rules.removal : rules.install
        guard apply else { return SetupCommandRunner.print(commands, subcommand: "transparent-rules") }
        try SetupCommandRunner.run(commands)
        StandardError.write("transparent-rules: \(remove ? "removed" : "installed") (\(commands.filter { !$0.mayFail }.count) rules)\n")
    }
}
