import Testing
@testable import ProxyConfig

/// The admin address `healthcheck` probes: `admin-listen` alone, read leniently, so a config file
/// edited since the proxy started does not fail the probe of a healthy proxy.
@Suite struct HealthcheckAddressTests {
    static let path = "/etc/proxy.yaml"

    static func address(flags: [String: [String]] = [:], env: [String: String] = [:], file: String?) throws(ConfigurationError)
        -> ConfigurationLoader.AdminAddress
    {
        try ConfigurationLoader.adminAddress(flagValues: flags, environment: env) { path in
            guard path == Self.path, let file else { throw MissingFile() }
            return file
        }
    }

    @Test func onlyTheAdminKeyOfTheFileIsRead() throws {
        let env = ["HTTPDNS_PROXY_CONFIG": Self.path, "HTTPDNS_PROXY_LISTEN": "not an address"]
        let files = [
            "admin-listen: 127.0.0.1:9001\nconect-timeout: 3s\n",  // an unknown key
            "admin-listen: 127.0.0.1:9001\nlisten: nope\nprovider: alibaba\n",  // invalid values, a missing account
            "provider: system\nadmin-listen: \"127.0.0.1:9001\"  # ours\nallow-destination: [10.0.0.0/8\n",  // not YAML
            "a: b: c\nadmin-listen:   127.0.0.1:9001\n",  // not YAML
        ]
        for file in files {
            let found = try Self.address(env: env, file: file)
            #expect(found.listen == HostPort(host: "127.0.0.1", port: 9001), "\(file)")
            #expect(found.source == .configFile(path: Self.path, key: "admin-listen") && found.note == nil, "\(file)")
        }
        let off = try Self.address(env: env, file: "admin-listen: 'off'\nx: [\n")
        #expect(off.listen == nil)
    }

    @Test func withoutTheKeyTheDefaultIsProbedAndWhyIsSaid() throws {
        let env = ["HTTPDNS_PROXY_CONFIG": Self.path]
        let valid = try Self.address(env: env, file: "listen: nope\n")
        #expect(valid.listen == HostPort(host: "127.0.0.1", port: 8081) && valid.source == .defaults && valid.note == nil)
        let broken = try Self.address(env: env, file: "listen: [\n")
        #expect(broken.listen == HostPort(host: "127.0.0.1", port: 8081))
        #expect(broken.note == "config file /etc/proxy.yaml is not valid YAML and has no 'admin-listen:' line", "\(broken)")
        let missing = try Self.address(env: env, file: nil)
        #expect(missing.listen == HostPort(host: "127.0.0.1", port: 8081))
        #expect(missing.note == "cannot read config file /etc/proxy.yaml: No such file or directory", "\(missing)")
    }

    @Test func flagAndEnvironmentWinAndABadAdminValueIsAnError() throws {
        let file = "admin-listen: 127.0.0.1:9001\n"
        let env = ["HTTPDNS_PROXY_CONFIG": Self.path, "HTTPDNS_PROXY_ADMIN_LISTEN": "127.0.0.1:9002"]
        #expect(try Self.address(env: env, file: file).listen == HostPort(host: "127.0.0.1", port: 9002))
        let flagged = try Self.address(flags: ["admin-listen": ["[::1]:9003"]], env: env, file: file)
        #expect(flagged.listen == HostPort(host: "::1", port: 9003) && flagged.source == .commandLine(flag: "--admin-listen"))
        #expect(throws: ConfigurationError.self) {
            try Self.address(env: ["HTTPDNS_PROXY_CONFIG": Self.path], file: "admin-listen: nope\n")
        }
    }
}
