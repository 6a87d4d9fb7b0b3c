import HTTPDNS
import ProxyConfig

extension ResolverStack {
    /// Why the configured provider cannot work on this machine (checked at start and before a
    /// reload is applied), or nil. The configuration loader has checked the settings themselves.
    package static func providerProblem(_ configuration: ProxyConfiguration) -> String? {
        if let problem = staticListProblem(configuration) { return problem }
        guard configuration.provider == .tencent, configuration.tencent.mode == .http, configuration.tencent.algorithm == .des else {
            return nil
        }
        return TencentCipher.isDESAvailable ? nil : "--tencent-alg des: \(TencentCipher.SetupError.desUnavailable)"
    }

    /// Provider `tencent` for the configured mode.
    static func makeTencent(_ configuration: ProxyConfiguration, endpoint: String, client: ResolverClient) -> any HTTPDNSProvider {
        let settings = configuration.tencent
        let authentication: TencentHTTPDNS.Authentication
        switch settings.mode {
        case .https:
            authentication = .token(settings.token ?? "")
        case .http:
            do {
                let algorithm: TencentCipher.Algorithm = settings.algorithm == .des ? .des : .aes
                authentication = .encrypted(try TencentCipher(algorithm: algorithm, key: settings.key ?? ""))
            } catch {
                // Start-up and reload refuse such a configuration first (providerProblem, loader checks).
                return UnusableProvider(name: "tencent", failure: ResolveFailure(kind: .auth, message: "tencent: \(error)", negativeTTL: nil))
            }
        }
        return TencentProvider(
            endpoint: endpoint, id: settings.id ?? "", authentication: authentication,
            ecsIP: settings.ecsIP.map(\.description), client: client)
    }
}

/// A provider whose settings cannot work: every query fails with the reason (system fallback applies).
struct UnusableProvider: HTTPDNSProvider {
    let name: String
    let failure: ResolveFailure

    func resolve(_ host: String, families: AddressFamilies) async throws(ResolveFailure) -> ResolvedAnswer {
        throw failure
    }
}
