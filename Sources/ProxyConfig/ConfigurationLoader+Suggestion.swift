extension ConfigurationLoader {
    /// The file key closest to a misspelt one, for "did you mean" hints.
    ///
    /// Case, underscores and camelCase are folded first, so "connect_timeout"
    /// and "connectTimeout" both suggest "connect-timeout". Beyond that, up to
    /// a third of the key's length may differ (at least 2 edits) before no
    /// suggestion is better than a wrong one.
    static func closestFileKey(to key: String) -> String? {
        let folded = fold(key)
        var best: (name: String, distance: Int)?
        for option in ConfigOption.all where option.isAllowedInFile {
            let distance = editDistance(folded, fold(option.name))
            if distance < (best?.distance ?? Int.max) {
                best = (option.name, distance)
            }
        }
        guard let best, best.distance <= max(2, key.count / 3) else { return nil }
        return best.name
    }

    /// The option variable closest to a misspelt `HTTPDNS_PROXY_*` one ("HTTPDNS_PROXY_LISTN" →
    /// "HTTPDNS_PROXY_LISTEN"), with the same tolerance as `closestFileKey`; nil when none is close.
    public static func closestEnvironmentVariable(to name: String) -> String? {
        guard name.hasPrefix(ConfigOption.environmentPrefix) else { return nil }
        let key = String(name.dropFirst(ConfigOption.environmentPrefix.count))
        let folded = fold(key.lowercased())
        var best: (variable: String, distance: Int)?
        for option in ConfigOption.all where !option.isMapping {
            let distance = editDistance(folded, fold(option.name))
            if distance < (best?.distance ?? Int.max) {
                best = (option.environmentVariable, distance)
            }
        }
        guard let best, best.distance <= max(2, key.count / 3) else { return nil }
        return best.variable
    }

    /// The flag closest to a misspelt one ("--lisen" → "--listen"), with the same tolerance as
    /// `closestFileKey`; nil when none is close. Mapping options have no flag and are not offered.
    public static func closestFlag(to flag: String) -> String? {
        let key = String(flag.drop { $0 == "-" })
        let folded = fold(key)
        var best: (flag: String, distance: Int)?
        for option in ConfigOption.all where option.isAllowedInFlagsAndEnvironment {
            let distance = editDistance(folded, fold(option.name))
            if distance < (best?.distance ?? Int.max) {
                best = (option.flag, distance)
            }
        }
        guard let best, best.distance <= max(2, key.count / 3) else { return nil }
        return best.flag
    }

    /// Lowercase kebab-case: "connectTimeout" and "CONNECT_TIMEOUT" become "connect-timeout".
    private static func fold(_ key: String) -> [Character] {
        var result: [Character] = []
        var previousWasLower = false
        for character in key {
            if character.isUppercase && previousWasLower { result.append("-") }
            previousWasLower = character.isLowercase
            result.append(character == "_" ? "-" : Character(character.lowercased()))
        }
        return result
    }

    /// Levenshtein distance with one rolling row.
    public static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var row = Array(0...b.count)
        for i in 1...a.count {
            var diagonal = row[0]
            row[0] = i
            for j in 1...b.count {
                let above = row[j]
                row[j] = min(above + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1))
                diagonal = above
            }
        }
        return row[b.count]
    }
}
