import NIOCore

extension ProxyConfiguration: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Shown instead of a secret value.
    public static let redacted = "<redacted>"

    /// Every field as display text, secrets replaced by `redacted` (nil ones
    /// shown as "nil", so whether a secret is set stays visible).
    ///
    /// Explicit on purpose: a generic mirror would print the secrets. A test
    /// checks that every stored property is listed here.
    public var displayFields: [(name: String, value: String)] {
        func text<T>(_ value: T?) -> String { value.map { "\($0)" } ?? "nil" }
        func list<T>(_ values: [T]) -> String { "[" + values.map { "\($0)" }.joined(separator: ", ") + "]" }
        func duration(_ value: TimeAmount) -> String { value.configDescription }
        let pins = spkiPins.keys.sorted().map { "\($0): \(list(spkiPins[$0]!))" }
        return [
            ("listen", "\(listen)"),
            ("adminListen", text(adminListen)),
            ("pacProxy", text(pacProxy)),
            ("pacBypass", list(pacBypass)),
            ("provider", provider.rawValue),
            ("resolverURL", text(resolverURL)),
            ("resolverIPs", list(resolverIPs)),
            ("accountID", text(accountID)),
            ("secret", secret == nil ? "nil" : Self.redacted),
            ("alibabaAPI", alibabaAPI.rawValue),
            ("alibabaEncryption", alibabaEncryption.rawValue),
            ("aesKey", aesKey == nil ? "nil" : Self.redacted),
            ("schedulerRefresh", duration(schedulerRefresh)),
            ("dohSignature", text(dohSignature)), // DoHSignature redacts its own secret
            ("dohTimestampUnit", dohTimestampUnit.rawValue),
            ("dohMethod", dohMethod.rawValue),
            ("tencent", "\(tencent)"), // TencentSettings redacts its token and key
            ("staticList", text(staticList)),
            ("staticRefresh", duration(staticRefresh)),
            ("resolverTimeout", duration(resolverTimeout)),
            ("resolverCAFile", text(resolverCAFile)),
            ("ipFamily", ipFamily.rawValue),
            ("minTTL", duration(minTTL)),
            ("maxTTL", duration(maxTTL)),
            ("negativeTTL", duration(negativeTTL)),
            ("maxStale", duration(maxStale)),
            ("systemFallback", "\(systemFallback)"),
            ("cacheSize", "\(cacheSize)"),
            ("cacheImmutable", "\(cacheImmutable)"),
            ("cacheFile", text(cacheFile)),
            ("keepaliveDomains", list(keepaliveDomains)),
            ("preload", list(preload)),
            ("connectPorts", list(connectPorts)),
            ("allowDestinations", list(allowDestinations)),
            ("allowClients", list(allowClients)),
            ("proxyAuth", list(proxyAuth)), // ProxyAuthSource redacts passwords
            ("proxyAuthRealm", proxyAuthRealm),
            ("maxConnections", "\(maxConnections)"),
            ("maxConnectionsPerClient", "\(maxConnectionsPerClient)"),
            ("caFile", text(caFile)),
            ("tlsUpgrade", list(tlsUpgrade)),
            ("spkiPins", pins.isEmpty ? "[:]" : "[" + pins.joined(separator: ", ") + "]"),
            ("logLevel", logLevel.rawValue),
            ("logFormat", logFormat.rawValue),
            ("accessLog", "\(accessLog)"),
            ("accessLogFormat", accessLogFormat.rawValue),
            ("requestIDHeader", text(requestIDHeader)),
            ("metrics", "\(metrics)"),
            ("networkMonitor", "\(networkMonitor)"),
            ("connectTimeout", duration(connectTimeout)),
            ("ipBackoff", duration(ipBackoff)),
            ("ipBackoffMax", duration(ipBackoffMax)),
            ("upstreamTimeout", duration(upstreamTimeout)),
            ("headerTimeout", duration(headerTimeout)),
            ("clientIdleTimeout", duration(clientIdleTimeout)),
            ("tunnelIdleTimeout", duration(tunnelIdleTimeout)),
            ("poolMaxIdle", "\(poolMaxIdle)"),
            ("poolIdleTimeout", duration(poolIdleTimeout)),
            ("shutdownGrace", duration(shutdownGrace)),
            ("viaPseudonym", viaPseudonym),
            ("threads", "\(threads)"),
            ("configFile", text(configFile)),
            ("compareSystemDNS", "\(compareSystemDNS)"),
            ("compareRate", "\(compareRate)"),
            ("probeDomains", list(probeDomains)),
            ("systemDNSDomains", "\(systemDNSDomains)"),
            ("transparentListen", text(transparentListen)),
            ("transparentFallback", transparentFallback.rawValue),
            ("transparentPeekTimeout", duration(transparentPeekTimeout)),
            ("outboundMark", text(outboundMark)),
            ("dnsListen", text(dnsListen)),
            ("dnsForwardZones", "\(dnsForwardZones)"),
            ("dnsUpstreams", list(dnsUpstreams)),
            ("dnsRateLimit", "\(dnsRateLimit)"),
            ("dohListen", text(dohListen)),
            ("dohToken", dohToken == nil ? "nil" : Self.redacted),
            ("fallbackProvider", text(fallbackProvider?.rawValue)),
            ("fallbackResolverURL", text(fallbackResolverURL)),
            ("resolverToken", resolverToken == nil ? "nil" : Self.redacted),
        ]
    }

    /// "ProxyConfiguration(listen: 127.0.0.1:8080, ..., secret: <redacted>, ...)".
    public var description: String {
        "ProxyConfiguration(" + displayFields.map { "\($0.name): \($0.value)" }.joined(separator: ", ") + ")"
    }

    public var debugDescription: String { description }

    /// The display text of each field, so `dump` and debuggers show no secrets either.
    public var customMirror: Mirror {
        Mirror(self, children: displayFields.map { (label: $0.name, value: $0.value as Any) }, displayStyle: .struct)
    }
}

extension ProxyConfiguration {
    /// The names of the fields (as in `description`) whose values differ from `other`'s. Secrets
    /// are compared by value, not by their redacted text.
    public func differingFields(from other: ProxyConfiguration) -> [String] {
        var names: [String] = []
        for (mine, theirs) in zip(displayFields, other.displayFields) where mine.value != theirs.value {
            names.append(mine.name)
        }
        if secret != other.secret, !names.contains("secret") { names.append("secret") }
        if aesKey != other.aesKey, !names.contains("aesKey") { names.append("aesKey") }
        if dohSignature != other.dohSignature, !names.contains("dohSignature") { names.append("dohSignature") }
        if tencent != other.tencent, !names.contains("tencent") { names.append("tencent") }
        if proxyAuth != other.proxyAuth, !names.contains("proxyAuth") { names.append("proxyAuth") }
        return names
    }
}
