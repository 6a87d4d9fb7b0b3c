import ProxyConfig
import ProxyKit
import Testing

@testable import DNSListener

/// The NodeLocal set-up as commands, exactly: the interface and addresses, NOTRACK and ACCEPT for
/// DNS both ways per address and protocol, jumps at the head of the chains, IPv6 through
/// ip6tables, a removal that leaves nothing (scripts/nodelocal-netns-test.sh runs them for real).
@Suite struct NodeLocalRulesTests {
    static func rules(_ addresses: String..., interface: String = "nodelocaldns", port: Int = 53) -> NodeLocalRules {
        NodeLocalRules(interface: interface, addresses: addresses.map { IPAddress($0)! }, port: port)
    }

    @Test func chainNamesFitIptables() {
        // xt_table's limit: 28 characters and the NUL; a longer name fails at -N.
        #expect(NodeLocalRules.notrackChain.utf8.count <= 28)
        #expect(NodeLocalRules.acceptChain.utf8.count <= 28)
    }

    @Test func installForOneIPv4Address() {
        let lines = Self.rules("169.254.20.10").install.map(\.line)
        let made = lines.drop { $0.hasSuffix("|| true") && !$0.contains("link add") }
        #expect(Array(made) == [
            "ip link add nodelocaldns type dummy 2>/dev/null || true",
            "ip link set nodelocaldns up",
            "ip addr replace 169.254.20.10/32 dev nodelocaldns",
            "iptables -w -t raw -N HTTPDNS_PROXY_NODELOCAL",
            "iptables -w -t filter -N HTTPDNS_PROXY_NODELOCAL_OK",
            "iptables -w -t raw -A HTTPDNS_PROXY_NODELOCAL -d 169.254.20.10 -p udp --dport 53 -j NOTRACK",
            "iptables -w -t filter -A HTTPDNS_PROXY_NODELOCAL_OK -d 169.254.20.10 -p udp --dport 53 -j ACCEPT",
            "iptables -w -t raw -A HTTPDNS_PROXY_NODELOCAL -s 169.254.20.10 -p udp --sport 53 -j NOTRACK",
            "iptables -w -t filter -A HTTPDNS_PROXY_NODELOCAL_OK -s 169.254.20.10 -p udp --sport 53 -j ACCEPT",
            "iptables -w -t raw -A HTTPDNS_PROXY_NODELOCAL -d 169.254.20.10 -p tcp --dport 53 -j NOTRACK",
            "iptables -w -t filter -A HTTPDNS_PROXY_NODELOCAL_OK -d 169.254.20.10 -p tcp --dport 53 -j ACCEPT",
            "iptables -w -t raw -A HTTPDNS_PROXY_NODELOCAL -s 169.254.20.10 -p tcp --sport 53 -j NOTRACK",
            "iptables -w -t filter -A HTTPDNS_PROXY_NODELOCAL_OK -s 169.254.20.10 -p tcp --sport 53 -j ACCEPT",
            "iptables -w -t raw -I PREROUTING 1 -j HTTPDNS_PROXY_NODELOCAL",
            "iptables -w -t raw -I OUTPUT 1 -j HTTPDNS_PROXY_NODELOCAL",
            "iptables -w -t filter -I INPUT 1 -j HTTPDNS_PROXY_NODELOCAL_OK",
            "iptables -w -t filter -I OUTPUT 1 -j HTTPDNS_PROXY_NODELOCAL_OK",
        ])
        // Whatever an earlier run left goes first, and may be absent.
        let first = lines.prefix { !$0.contains("link add") }
        #expect(first.count == 8)
        #expect(first.allSatisfy { $0.hasSuffix("2>/dev/null || true") && $0.hasPrefix("iptables ") })
    }

    @Test func ipv6AddressesGoThroughIp6tablesAndAFamilyWithoutAddressGetsNoRules() {
        let v6Only = Self.rules("fd00::a", port: 5353).install.map(\.line)
        #expect(v6Only.contains("ip addr replace fd00::a/128 dev nodelocaldns"))
        #expect(v6Only.contains("ip6tables -w -t raw -A HTTPDNS_PROXY_NODELOCAL -d fd00::a -p udp --dport 5353 -j NOTRACK"))
        #expect(!v6Only.contains { $0.hasPrefix("iptables ") })
        let both = Self.rules("169.254.20.10", "fd00::a").install.map(\.line)
        #expect(both.filter { $0.contains("-I PREROUTING 1") }.count == 2)
        #expect(both.contains { $0.hasPrefix("iptables ") && $0.contains("169.254.20.10") })
        #expect(!both.contains { $0.hasPrefix("iptables ") && $0.contains("fd00::a") })
    }

    @Test func removalTakesRulesAddressesAndOnlyADummyInterface() {
        let removal = Self.rules("169.254.20.10", interface: "lo").removal
        #expect(removal.allSatisfy { $0.mayFail })
        #expect(removal.map(\.line).suffix(2) == [
            "ip addr del 169.254.20.10/32 dev lo 2>/dev/null || true",
            "ip link del lo type dummy 2>/dev/null || true",
        ])
        #expect(removal.contains { $0.arguments == ["iptables", "-w", "-t", "raw", "-X", "HTTPDNS_PROXY_NODELOCAL"] })
        #expect(removal.contains { $0.arguments == ["iptables", "-w", "-t", "filter", "-D", "INPUT", "-j", "HTTPDNS_PROXY_NODELOCAL_OK"] })
    }

    @Test func problemsAreNamed() {
        #expect(Self.rules("169.254.20.10").problem == nil)
        #expect(NodeLocalRules(addresses: []).problem == "give at least one --address")
        #expect(Self.rules("127.0.0.1").problem?.contains("loopback") == true)
        #expect(Self.rules("::1").problem?.contains("loopback") == true)
        #expect(Self.rules("169.254.20.10", port: 0).problem == "--port must be 1...65535")
        for bad in ["", "a-name-far-too-long", "a/b", "a b", "a:b"] {
            #expect(Self.rules("169.254.20.10", interface: bad).problem?.hasPrefix("--interface") == true, "\(bad)")
        }
    }
}
