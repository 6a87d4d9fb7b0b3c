import CurlTransport
import ProxyKit
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HTTPDNS
import Logging
import ProxyConfig

extension ResolverStack {
    /// The `/ss` sdk_version this proxy reports.
    static let alibabaSDKVersion = "httpdns-proxy"

    /// Alibaba v2: the provider and the scheduler that keeps `servers` on the scheduled IPs. The
    /// loader has checked that the secret and AES key are hex.
    static func makeAlibabaV2(
        _ configuration: ProxyConfiguration, servers: ResolverServers, client: ResolverClient, transport: CurlTransport, logger: Logger
    ) -> (provider: AlibabaV2Provider, scheduler: AlibabaServiceScheduler) {
        let url = configuration.effectiveResolverURL ?? ""
        let account = configuration.accountID ?? ""
        let unixTime: @Sendable () -> Int = { Int(Date().timeIntervalSince1970) }
        let scheduler = AlibabaServiceScheduler(
            settings: .init(
                serviceRoot: url,
                accountID: account,
                secret: configuration.secret,
                sdkVersion: alibabaSDKVersion,
                refreshInterval: configuration.schedulerRefresh.duration,
                timeout: configuration.resolverTimeout.duration,
                caFile: configuration.resolverCAFile,
                // asked at every /ss fetch: a network change can bring or take IPv6
                useIPv6ServiceIPs: { HostAddressFamilies.detect().wantsIPv6 }
            ),
            servers: servers,
            transport: transport,
            unixTime: unixTime,
            logger: logger
        )
        let encryption: AlibabaHTTPDNSV2.Encryption
        switch configuration.alibabaEncryption {
        case .none: encryption = .none
        case .cbc: encryption = .cbc
        case .gcm: encryption = .gcm
        }
        let provider = AlibabaV2Provider(
            serviceRoot: url,
            credentials: .init(
                accountID: account,
                secretKey: configuration.secret.flatMap(Digest.bytes(fromHex:)),
                aesKey: configuration.aesKey.flatMap(Digest.bytes(fromHex:)),
                encryption: encryption
            ),
            client: client,
            scheduler: scheduler,
            unixTime: unixTime
        )
        return (provider, scheduler)
    }
}
