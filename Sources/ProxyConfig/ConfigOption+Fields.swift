/// Which options set which `ProxyConfiguration` field, so that whatever reports a change (the
/// `POST /reload` answer, its log line, `/stats`) names options exactly as `--help` spells them,
/// from the registry, never the Swift field names.
extension ConfigOption {
    /// One part of a field that several options set: the option, and whether its part differs.
    struct Part: Sendable {
        var option: ConfigOption
        var differs: @Sendable (ProxyConfiguration, ProxyConfiguration) -> Bool
    }

    /// Fields whose option is not simply the field's name in kebab case (`resolverURL` is
    /// `resolver-url`, `minTTL` is `min-ttl`, `compareSystemDNS` is `compare-system-dns`).
    private static let renamedFields: [String: ConfigOption] = [
        "resolverIPs": resolverIP,
        "allowClients": allowClient,
        "allowDestinations": allowDestination,
        "viaPseudonym": via,
        "configFile": config,
        "systemDNSDomains": systemDNSDomain,
        "dnsForwardZones": dnsForwardZone,
        "dnsUpstreams": dnsUpstream,
        "fallbackResolverURL": fallbackResolverURL,
    ]

    /// Fields set by several options, each compared on its own part.
    private static let compositeFields: [String: [Part]] = [
        "dohSignature": [
            Part(option: dohUID) { $0.dohSignature?.uid != $1.dohSignature?.uid },
            Part(option: dohAccessKeyID) { $0.dohSignature?.accessKeyID != $1.dohSignature?.accessKeyID },
            Part(option: dohAccessKeySecret) { $0.dohSignature?.accessKeySecret != $1.dohSignature?.accessKeySecret },
        ],
        "tencent": [
            Part(option: tencentMode) { $0.tencent.mode != $1.tencent.mode },
            Part(option: tencentID) { $0.tencent.id != $1.tencent.id },
            Part(option: tencentToken) { $0.tencent.token != $1.tencent.token },
            Part(option: tencentKey) { $0.tencent.key != $1.tencent.key },
            Part(option: tencentAlg) { $0.tencent.algorithm != $1.tencent.algorithm },
            Part(option: tencentECSIP) { $0.tencent.ecsIP != $1.tencent.ecsIP },
        ],
    ]

    /// The options that set `field` (a name as `ProxyConfiguration.description` shows it); empty
    /// for a field no option sets (a test checks there is none).
    public static func options(forField field: String) -> [ConfigOption] {
        if let parts = compositeFields[field] { return parts.map(\.option) }
        if let option = renamedFields[field] { return [option] }
        return named(kebabCase(field)).map { [$0] } ?? []
    }

    /// "resolverURL" → "resolver-url", "resolverCAFile" → "resolver-ca-file", "minTTL" → "min-ttl".
    static func kebabCase(_ camel: String) -> String {
        let characters = Array(camel)
        var out = ""
        for (index, character) in characters.enumerated() {
            if character.isUppercase, index > 0 {
                let previous = characters[index - 1]
                let next = index + 1 < characters.count ? characters[index + 1] : nil
                // A word starts at an upper-case letter after a lower-case one or a digit, or at the
                // last capital of an acronym followed by lower case ("CAFile": "ca", "file").
                if previous.isLowercase || previous.isNumber || (previous.isUppercase && next?.isLowercase == true) {
                    out.append("-")
                }
            }
            out += character.lowercased()
        }
        return out
    }

    /// The names of the options behind `fields` of `new` that differ from `old`, in `--help` order,
    /// each once. For a field set by several options, only the options whose part differs.
    public static func names(ofFields fields: some Sequence<String>, new: ProxyConfiguration, old: ProxyConfiguration) -> [String] {
        var wanted: Set<String> = []
        for field in fields {
            if let parts = compositeFields[field] {
                let differing = parts.filter { $0.differs(new, old) }
                // Set but indistinguishable by part (should not happen): name them all.
                for part in differing.isEmpty ? parts : differing { wanted.insert(part.option.name) }
            } else {
                for option in options(forField: field) { wanted.insert(option.name) }
            }
        }
        return all.map(\.name).filter { wanted.contains($0) }
    }
}
