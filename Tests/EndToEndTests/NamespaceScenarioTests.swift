import Foundation
import Testing

/// The network-namespace scenarios (scripts/netns-test.sh: the sidecar topology;
/// scripts/transparent-netns-test.sh: transparent interception; scripts/fleet-netns-test.sh: the
/// node tier; scripts/nodelocal-netns-test.sh: the NodeLocal DNS cache; scripts/socks-netns-test.sh:
/// real SOCKS and TLS-listener clients while /etc/hosts lies; scripts/parent-netns-test.sh: squid as
/// the parent proxy, the only way to the origin), run against the binary these tests use. Each script builds its own namespaces and
/// removes them; no traffic leaves them. They need root (CI runs the tests as root): otherwise
/// they are reported as skipped, and so is a script that finds a tool missing (it exits 77 then,
/// with the reason on a SKIPPED line). Each takes addresses and veth names of its own; they are
/// heavy, so two run at a time: the two nested suites, one scenario after another in each, split
/// so that the longest chain (the critical path of a parallel `swift test`) is about half of all.
@Suite("Namespace scenarios", .onBlockingThreads, .timeLimit(.minutes(10)),
       .enabled(if: ExternalTool.isRoot, "the namespace scenarios need root (network namespaces, netfilter)"))
struct NamespaceScenarioTests {
    /// scripts/NAME, found from this file: Tests/EndToEndTests/X.swift -> ../../scripts.
    static func script(_ name: String) -> String {
        var components = #filePath.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        components.removeLast(3)
        return (components + ["scripts", name]).joined(separator: "/")
    }

    /// Runs the script against the binary: passes on status 0, is skipped on 77 (the script's own
    /// check for a tool found something missing), fails otherwise with the end of its output.
    static func run(_ name: String) throws {
        let bash = try #require(ChildEnvironment.which("bash"))
        let binary = try ProxyProcess.binaryURL().path
        let run = try ExternalTool.run(bash, [script(name), binary], timeout: .seconds(480), environment: ["NETNS_SKIP_STATUS": "77"])
        if run.exitCode == 77 {
            let reason = run.stdout.split(separator: "\n").first { $0.contains("SKIPPED") }.map(String.init) ?? "a tool is missing"
            try Test.cancel("\(reason)")
        }
        #expect(run.exitCode == 0, "\(name) exited \(run.exitCode)\n\(run.stdout.suffix(4000))\n\(run.stderr.suffix(2000))")
    }

    /// About 50 s one after another on 2 cores: real SOCKS and TLS-listener clients, the parent
    /// proxy, NodeLocal, the sidecar.
    @Suite("Clients, the parent proxy, NodeLocal and the sidecar", .serialized)
    struct Clients {
        @Test func socksAndTLSListenerClientsWhileHostsLies() throws { try NamespaceScenarioTests.run("socks-netns-test.sh") }

        @Test func squidAsTheParentProxy() throws { try NamespaceScenarioTests.run("parent-netns-test.sh") }

        @Test func theNodeLocalDNSCache() throws { try NamespaceScenarioTests.run("nodelocal-netns-test.sh") }

        @Test func theSidecarTopology() throws { try NamespaceScenarioTests.run("netns-test.sh") }
    }

    /// About 38 s: the node tier's fleet (twenty pod proxies) and transparent interception, the two
    /// with sub-second latency checks, one after the other rather than side by side.
    @Suite("The node tier and transparent interception", .serialized)
    struct Fleet {
        @Test func theNodeTierFleet() throws { try NamespaceScenarioTests.run("fleet-netns-test.sh") }

        @Test func transparentInterception() throws { try NamespaceScenarioTests.run("transparent-netns-test.sh") }
    }
}
