import HTTPDNS
import Logging
import ProxyConfig
import Testing

@testable import ProxyUpstream

/// Provider `tencent` as the stack builds it, checked without sending anything anywhere.
@Suite struct TencentResolverStackTests {
    static func configuration(mode: TencentSettings.Mode, algorithm: TencentSettings.Algorithm = .aes) -> ProxyConfiguration {
        var configuration = ProxyConfiguration.defaults
        configuration.provider = .tencent
        configuration.ipFamily = .both
        configuration.tencent = TencentSettings(mode: mode, id: "1234", token: "tok", key: algorithm == .des ? "8charkey" : "aes-key", algorithm: algorithm)
        return configuration
    }

    @Test(arguments: [TencentSettings.Mode.https, .http])
    func buildsTheProviderForEitherMode(mode: TencentSettings.Mode) throws {
        let stack = ResolverStack(configuration: Self.configuration(mode: mode), logger: Logger(label: "test"))
        defer { stack.shutdown() }
        let provider = try #require(stack.provider)
        #expect(provider is TencentProvider)
        #expect(provider.name == "tencent")
        #expect(provider.supportsBatch)
        #expect(stack.description == "tencent \(mode.defaultResolverURL) pinned to [] families=both")
        #expect(ResolverStack.providerProblem(Self.configuration(mode: mode)) == nil)
    }

    @Test func desIsCheckedAtStart() {
        let problem = ResolverStack.providerProblem(Self.configuration(mode: .http, algorithm: .des))
        if TencentCipher.isDESAvailable {
            #expect(problem == nil)
        } else {
            print("SKIPPED (in part): OpenSSL's legacy provider is missing, so only the refusal is checked")
            #expect(problem?.contains("legacy provider") == true)
        }
        #expect(ResolverStack.providerProblem(Self.configuration(mode: .https, algorithm: .des)) == nil, "https mode needs no cipher")
    }

    @Test func settingsReloadLiveAndRebuildTheProvider() {
        let fields = ResolverStack.reloadableFields(for: .tencent)
        #expect(fields.isSuperset(of: ["tencent-mode", "tencent-token", "resolver-url", "resolver-ip", "ip-family", "system-fallback"]))
        let https = Self.configuration(mode: .https)
        let stack = ResolverStack(configuration: https, logger: Logger(label: "test"))
        defer { stack.shutdown() }
        var json = https
        json.provider = .json
        #expect(stack.canReload(from: https, to: json))
        #expect(stack.canReload(from: json, to: https))
        var staticList = https
        staticList.provider = .static
        #expect(!stack.canReload(from: https, to: staticList))

        let http = Self.configuration(mode: .http)
        let before = stack.provider.map { "\($0)" }
        stack.reload(to: http, changed: Set(http.differingOptions(from: https)))
        #expect(http.differingOptions(from: https) == ["tencent-mode"])
        #expect(stack.provider is TencentProvider)
        #expect(stack.provider.map { "\($0)" } != before, "a changed mode must build a new provider")
    }
}
