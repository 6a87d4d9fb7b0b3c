import Foundation
import Testing

/// The command line a user meets first: `--help`, the subcommands' help, misspellings, and
/// `config check`.
@Suite("Command line", .onBlockingThreads, .timeLimit(.minutes(1)))
struct CommandLineTests {
    @Test func topLevelHelpShowsTheServeOptionsGrouped() throws {
        let run = try ResolveRun.run(["--help"])
        #expect(run.status == 0, "\(run.stderr)")
        var last = run.stdout.startIndex
        for title in ["LISTENING:", "RESOLVER:", "UPSTREAM:", "ACCESS:", "ADMIN AND OBSERVABILITY:", "LIMITS:", "LOGGING:"] {
            let found = try #require(run.stdout.range(of: title), "no \(title) in \(run.stdout)")
            #expect(found.lowerBound >= last, "\(title) out of order")
            last = found.lowerBound
        }
        let serve = try ResolveRun.run(["serve", "--help"])
        let flags = Set(serve.stdout.split(separator: "\n").compactMap { line -> String? in
            let trimmed = line.drop { $0 == " " }
            guard trimmed.hasPrefix("--"), let name = trimmed.split(separator: " ").first else { return nil }
            return String(name)
        }).subtracting(["--help", "--version"])
        #expect(flags.count > 50, "\(serve.stdout)")
        let missing = flags.filter { !run.stdout.contains("  \($0) <") }
        #expect(missing.isEmpty, "serve flags missing from --help: \(missing.sorted())")
    }

    @Test func subcommandHelpListsOnlyWhatItReads() throws {
        let healthcheck = try ResolveRun.run(["help", "healthcheck"])
        #expect(healthcheck.stdout.contains("--admin-listen <"), "\(healthcheck.stdout)")
        #expect(!healthcheck.stdout.contains("--provider"), "\(healthcheck.stdout)")
        #expect(!healthcheck.stdout.contains("--listen <"))
        let resolve = try ResolveRun.run(["help", "resolve"])
        #expect(resolve.stdout.contains("--provider <"), "\(resolve.stdout)")
        #expect(!resolve.stdout.contains("--tunnel-idle-timeout"), "\(resolve.stdout)")
        #expect(!resolve.stdout.contains("--listen <"))
        // The hidden options are still accepted (a proxy's own environment and flags can be reused).
        let reused = try ResolveRun.run(["healthcheck", "--provider", "system", "--listen", "127.0.0.1:1", "--admin-listen", "off"])
        #expect(reused.status == 1 && reused.stderr.contains("the admin listener is off"), "\(reused.stderr)")
    }

    @Test func aMisspeltSubcommandGetsADidYouMean() throws {
        let run = try ResolveRun.run(["serv", "--listen", "127.0.0.1:0"])
        #expect(run.status == 64)
        #expect(run.stderr.contains("unknown subcommand 'serv' (did you mean 'serve'?)"), "\(run.stderr)")
        let far = try ResolveRun.run(["frobnicate"])
        #expect(far.status == 64)
        #expect(far.stderr.contains("unknown subcommand 'frobnicate'; the subcommands are serve, resolve, healthcheck, config"), "\(far.stderr)")
    }

    @Test func helpForAnUnknownSubcommandFails() throws {
        let run = try ResolveRun.run(["help", "foo"])
        #expect(run.status == 64, "\(run.stdout)")
        #expect(run.stderr.contains("unknown subcommand 'foo'"), "\(run.stderr)")
        #expect(try ResolveRun.run(["help", "resolve"]).status == 0)
    }

    @Test func anErrorPointsAtTheSubcommandsHelp() throws {
        let serve = try ResolveRun.run(["--listen", "nope"])
        #expect(serve.status == 64)
        #expect(serve.stderr.contains("invalid value 'nope' for --listen"), "\(serve.stderr)")
        #expect(serve.stderr.contains("See 'httpdns-proxy serve --help'"), "\(serve.stderr)")
        let resolve = try ResolveRun.run(["resolve", "--provider", "nope", "a.example"])
        #expect(resolve.status == 64)
        #expect(resolve.stderr.contains("See 'httpdns-proxy resolve --help'"), "\(resolve.stderr)")
        // The option table's own errors keep ArgumentParser's wording and point at the subcommand.
        let misspelt = try ResolveRun.run(["serve", "--lisen", "127.0.0.1:0"])
        #expect(misspelt.status == 64)
        #expect(misspelt.stderr.contains("Unknown option '--lisen'. Did you mean '--listen'?"), "\(misspelt.stderr)")
        #expect(misspelt.stderr.contains("See 'httpdns-proxy serve --help'"), "\(misspelt.stderr)")
        let missing = try ResolveRun.run(["serve", "--listen"])
        #expect(missing.status == 64)
        #expect(missing.stderr.contains("Missing value for '--listen <host:port>'"), "\(missing.stderr)")
        let check = try ResolveRun.run(["config", "check", "--conect-timeout=3s"])
        #expect(check.status == 64)
        #expect(check.stderr.contains("Did you mean '--connect-timeout'?"), "\(check.stderr)")
        #expect(check.stderr.contains("See 'httpdns-proxy config check --help'"), "\(check.stderr)")
        let fileOnly = try ResolveRun.run(["serve", "--spki-pins", "x"])
        #expect(fileOnly.status == 64)
        #expect(fileOnly.stderr.contains("spki-pins can only be set in the config file"), "\(fileOnly.stderr)")
        let noHost = try ResolveRun.run(["resolve", "--provider", "system"])
        #expect(noHost.status == 64)
        #expect(noHost.stderr.contains("Missing expected argument '<host>'"), "\(noHost.stderr)")
    }

    /// serve's options come from the option table: `--flag=value`, a bare boolean, the
    /// environment under a flag, and every option's help with its default and variable.
    @Test func theOptionTableReadsTheCommandLine() throws {
        let run = try ResolveRun.run(
            ["config", "check", "--listen=127.0.0.1:18081", "--cache-immutable", "--output", "text", "--metrics", "false"],
            environment: ["HTTPDNS_PROXY_LISTEN": "127.0.0.1:18082", "HTTPDNS_PROXY_VIA": "from-env"])
        #expect(run.status == 0, "\(run.stderr)")
        for expected in [
            "listen: 127.0.0.1:18081  # flag --listen", "cache-immutable: true  # flag --cache-immutable",
            "metrics: false  # flag --metrics", "via: from-env  # env HTTPDNS_PROXY_VIA",
        ] {
            #expect(run.stdout.contains(expected), "\(expected) in \(run.stdout)")
        }
        let help = try ResolveRun.run(["help", "serve"])
        #expect(help.status == 0)
        for line in ["  --listen <host:port>", "(default: 127.0.0.1:8080) [env: HTTPDNS_PROXY_LISTEN]", "  --cache-immutable <bool>"] {
            #expect(help.stdout.contains(line), "\(line) in \(help.stdout)")
        }
        #expect(try ResolveRun.run(["serve", "--listen", "127.0.0.1:0", "--help"]).stdout == help.stdout)
    }

    /// The rules never guess the proxy's uid: a wrong guess sends its own connections back to it.
    @Test func transparentRulesNeedTheProxysUIDOrMark() throws {
        let bare = try ResolveRun.run(["transparent-rules", "--listener-port", "15001"])
        #expect(bare.status != 0, "\(bare.stdout)")
        #expect(bare.stderr.contains("give --proxy-uid (the uid the proxy runs as) or --outbound-mark"), "\(bare.stderr)")
        #expect(!bare.stdout.contains("--uid-owner"), "\(bare.stdout)")
        let root = try ResolveRun.run(["transparent-rules", "--listener-port", "15001", "--proxy-uid", "0"])
        #expect(root.status != 0, "\(root.stdout)")
        #expect(root.stderr.contains("--proxy-uid 0 would exempt all of root's traffic"), "\(root.stderr)")
        let uid = try ResolveRun.run(["transparent-rules", "--listener-port", "15001", "--proxy-uid", "10001"])
        #expect(uid.status == 0, "\(uid.stderr)")
        #expect(uid.stdout.contains("-m owner --uid-owner 10001 -j RETURN"), "\(uid.stdout)")
        let mark = try ResolveRun.run(["transparent-rules", "--listener-port", "15001", "--proxy-uid", "0", "--outbound-mark", "0x100"])
        #expect(mark.status == 0, "\(mark.stderr)")
        #expect(mark.stdout.contains("-m mark --mark 256 -j RETURN"), "\(mark.stdout)")
        #expect(try ResolveRun.run(["transparent-rules", "--remove"]).status == 0)
    }

    /// The NodeLocal set-up prints a script by default and refuses what pods could not reach.
    @Test func nodelocalRulesPrintAScriptAndRefuseBadAddresses() throws {
        let script = try ResolveRun.run(["nodelocal-rules"])
        #expect(script.status == 0, "\(script.stderr)")
        #expect(script.stdout.hasPrefix("#!/bin/sh\n"), "\(script.stdout)")
        #expect(script.stdout.contains("ip addr replace 169.254.20.10/32 dev nodelocaldns\n"), "\(script.stdout)")
        #expect(script.stdout.contains("-d 169.254.20.10 -p udp --dport 53 -j NOTRACK\n"), "\(script.stdout)")
        let loopback = try ResolveRun.run(["nodelocal-rules", "--address", "127.0.0.1"])
        #expect(loopback.status == 64 && loopback.stdout.isEmpty, "\(loopback.stdout)")
        #expect(loopback.stderr.contains("--address 127.0.0.1 is a loopback address"), "\(loopback.stderr)")
        let bad = try ResolveRun.run(["nodelocal-rules", "--address", "169.254.20"])
        #expect(bad.status == 64 && bad.stderr.contains("--address 169.254.20: expected an IPv4 address"), "\(bad.stderr)")
    }

    @Test func configCheckPrintsTheEffectiveConfigurationRedacted() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("config-check-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let good = directory.appendingPathComponent("good.yaml").path
        try "listen: 127.0.0.1:18080\nprovider: system\nsecret: s3cret-value\n".write(toFile: good, atomically: true, encoding: .utf8)
        let run = try ResolveRun.run(["config", "check", "--config", good, "--connect-timeout", "7s"],
                                     environment: ["HTTPDNS_PROXY_LISTN": "x", "HTTPDNS_PROXY_LOG_LEVEL": "debug"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("listen: 127.0.0.1:18080"), "\(run.stdout)")
        #expect(run.stdout.contains("connect-timeout: 7s"), "\(run.stdout)")
        #expect(run.stdout.contains("log-level: debug"), "\(run.stdout)")
        #expect(run.stdout.contains("secret: <redacted>"), "\(run.stdout)")
        #expect(!run.stdout.contains("s3cret") && !run.stderr.contains("s3cret"))
        #expect(run.stderr.contains("HTTPDNS_PROXY_LISTN is ignored (did you mean HTTPDNS_PROXY_LISTEN?)"), "\(run.stderr)")

        let bad = directory.appendingPathComponent("bad.yaml").path
        try "listen: 127.0.0.1:18080\nconect-timeout: 3s\n".write(toFile: bad, atomically: true, encoding: .utf8)
        let failed = try ResolveRun.run(["config", "check", "--config", bad])
        #expect(failed.status == 1)
        #expect(failed.stderr.contains("unknown key 'conect-timeout'") && failed.stderr.contains("did you mean 'connect-timeout'"), "\(failed.stderr)")
        #expect(failed.stdout.isEmpty)
    }
}
