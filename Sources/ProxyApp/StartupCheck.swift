import ProxyAccess
import ProxyKit
import ProxyUpstream

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import OpenSSLTLS
import ProxyConfig

/// What the proxy needs besides valid option values, checked the way the proxy uses it: the
/// files a configuration names (htpasswd files parsed and their hashes understood, CA files loaded
/// by OpenSSL, the access log's directory) and what only this machine can tell about the
/// provider. `serve`, `config check` and a reload all call it, so the check's verdict is the
/// start's. (Listener addresses are compared by the loader: that needs no machine.)
package enum StartupCheck {
    /// The first problem, or nil when the proxy can start with `configuration`.
    package static func problem(_ configuration: ProxyConfiguration) -> String? {
        if let problem = ResolverStack.providerProblem(configuration) { return problem }
        if let problem = ResolverStack.hostsFileProblem(configuration) { return problem }
        do {
            try ProxyAuthenticator.check(configuration)
        } catch {
            return ProxyServerSetupError.proxyAuth(error.description).description
        }
        do {
            _ = try ProxyServer.makeTLSContext(configuration)
        } catch {
            return ProxyServerSetupError.tls(error).description
        }
        do {
            _ = try ProxyServer.parentSettings(configuration)
        } catch {
            return ProxyServerSetupError.parentTLS(error).description
        }
        do {
            _ = try ProxyServer.makeTLSServerContext(configuration)
        } catch {
            return ProxyServerSetupError.tlsListener(error).description
        }
        if let problem = resolverCAProblem(configuration.resolverCAFile) { return problem }
        if let problem = AccessLogWriter.problem(target: configuration.accessLog) { return "\(problem) (check --access-log)" }
        return AccessLogWriter.problem(target: configuration.dnsQueryLog).map { "\($0) (check --dns-query-log)" }
    }

    /// libcurl reads `--resolver-ca-file` only at the first query and then fails every query
    /// (code 77), so the start loads it with OpenSSL as curl would.
    static func resolverCAProblem(_ path: String?) -> String? {
        guard let path else { return nil }
        guard access(path, R_OK) == 0 else {
            return "cannot read --resolver-ca-file \(path): \(String(cString: strerror(errno)))"
        }
        var tls = TLSClientConfiguration()
        tls.useSystemTrustStore = false
        tls.caFile = path
        do {
            _ = try TLSClientContext(configuration: tls)
        } catch {
            return "cannot use --resolver-ca-file \(path): \(error)"
        }
        return nil
    }
}
