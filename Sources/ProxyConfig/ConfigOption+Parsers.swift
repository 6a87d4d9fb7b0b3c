import NIOCore

/// Value parsers shared by the registry entries. Each throws `.malformedValue`
/// with a reason; the loader adds the option name and source.
extension ConfigOption {
    /// The single item of a single-valued option (the loader guarantees one).
    static func single(_ items: [String]) -> String {
        items.last ?? ""
    }

    /// A plain decimal integer in `range`; signs, spaces and exponents are rejected.
    static func integer(_ text: String, in range: ClosedRange<Int>, what: String = "a whole number") throws(ConfigurationError) -> Int {
        guard !text.isEmpty, text.count <= 18, text.allSatisfy({ $0.isASCII && $0.isNumber }),
              let value = Int(text), range.contains(value)
        else {
            let bound = range.upperBound == Int.max ? "\(range.lowerBound) or more" : "\(range.lowerBound)...\(range.upperBound)"
            throw .malformedValue(reason: "expected \(what) \(bound)")
        }
        return value
    }

    /// A duration via `TimeAmount(configDuration:)`.
    static func duration(_ text: String) throws(ConfigurationError) -> TimeAmount {
        try TimeAmount(configDuration: text)
    }

    /// One of a String-backed enum's raw values.
    static func keyword<Value: RawRepresentable & CaseIterable>(_ text: String, as type: Value.Type) throws(ConfigurationError) -> Value
    where Value.RawValue == String {
        guard let value = Value(rawValue: text) else {
            let choices = Value.allCases.map(\.rawValue).joined(separator: ", ")
            throw .malformedValue(reason: "expected one of: \(choices)")
        }
        return value
    }

    /// CONNECT ports: each 1...65535 (0 is no port one can connect to), at
    /// least one, returned sorted without duplicates.
    static func ports(_ items: [String]) throws(ConfigurationError) -> [Int] {
        guard !items.isEmpty else {
            throw .malformedValue(reason: "expected at least one port like 443 or 443,8443")
        }
        var ports: Set<Int> = []
        for item in items {
            guard let port = try? integer(item, in: 1...65535) else {
                throw .malformedValue(reason: "'\(item)' is not a port number 1...65535 (expected a list like 443,8443)")
            }
            ports.insert(port)
        }
        return ports.sorted()
    }

    /// CIDR blocks, in the order given.
    static func cidrs(_ items: [String]) throws(ConfigurationError) -> [CIDR] {
        var result: [CIDR] = []
        for item in items {
            result.append(try CIDR(parsing: item))
        }
        return result
    }

    /// An RFC 9110 token (1*tchar): the Via received-by pseudonym must be one,
    /// or the header we emit would be malformed and loop detection unreliable.
    static func token(_ text: String) throws(ConfigurationError) -> String {
        let tchars = Set("!#$%&'*+-.^_`|~")
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || tchars.contains($0)) }) else {
            throw .malformedValue(reason: "expected an HTTP token (letters, digits and !#$%&'*+-.^_`|~; no spaces or commas)")
        }
        return text
    }

    /// A listener's `host:port`, or `off` (nil). `disabling`: what `off` turns off, named in the
    /// error so the user learns the way out.
    static func listenAddress(_ text: String, disabling what: String?) throws(ConfigurationError) -> HostPort? {
        if text == "off" { return nil }
        do {
            return try HostPort(parsing: text)
        } catch {
            guard let what else { throw error }
            throw .malformedValue(reason: "\(error) (or 'off' to disable \(what))")
        }
    }

    /// A duration that may also be 0 ("0", "0s"), for options where 0 means "off".
    static func durationOrZero(_ text: String) throws(ConfigurationError) -> TimeAmount {
        try TimeAmount(configDuration: text, allowingZero: true)
    }

    /// true/false, yes/no or 1/0, any case.
    static func boolean(_ text: String) throws(ConfigurationError) -> Bool {
        switch text.lowercased() {
        case "true", "yes", "1": return true
        case "false", "no", "0": return false
        default: throw .malformedValue(reason: "expected true or false (also yes/no, 1/0)")
        }
    }

    /// An account or key id: 1-128 letters, digits, '-', '_' or '.', as it goes into URLs unescaped.
    static func identifier(_ text: String) throws(ConfigurationError) -> String {
        guard !text.isEmpty, text.count <= 128,
              text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == ".") })
        else {
            throw .malformedValue(reason: "expected an id of letters, digits, '-', '_' or '.' (at most 128)")
        }
        return text
    }

    /// A secret: any printable text. Messages about it use the option's expectation, never this text.
    static func secretText(_ text: String) throws(ConfigurationError) -> String {
        guard !text.isEmpty, !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .malformedValue(reason: "expected non-empty text without control characters")
        }
        return text
    }

    /// A file path: non-empty, one line.
    static func path(_ text: String) throws(ConfigurationError) -> String {
        guard !text.isEmpty, !text.contains(where: \.isNewline) else {
            throw .malformedValue(reason: "expected a file path")
        }
        return text
    }

    /// IP addresses, in the order given, duplicates dropped.
    static func ipAddresses(_ items: [String]) throws(ConfigurationError) -> [IPAddress] {
        var result: [IPAddress] = []
        for item in items {
            let address = try IPAddress(parsing: item)
            if !result.contains(address) { result.append(address) }
        }
        return result
    }

    /// Host names to resolve: validated, lowercased, without trailing dot, duplicates dropped.
    static func domainNames(_ items: [String]) throws(ConfigurationError) -> [String] {
        var result: [String] = []
        for item in items {
            let name = try HostName.normalize(item)
            if !result.contains(name) { result.append(name) }
        }
        return result
    }

    /// `tls-upgrade` rules, in the order given, duplicates dropped.
    static func tlsUpgradeRules(_ items: [String]) throws(ConfigurationError) -> [TLSUpgradeRule] {
        var result: [TLSUpgradeRule] = []
        for item in items {
            let rule = try TLSUpgradeRule(parsing: item)
            if !result.contains(rule) { result.append(rule) }
        }
        return result
    }

    /// `spki-pins`: host (or `*.` wildcard) to at least one pin; hosts
    /// lowercased, pins canonical, duplicates dropped.
    static func pinMapping(_ entries: [MappingEntry]) throws(ConfigurationError) -> [String: [String]] {
        var result: [String: [String]] = [:]
        for entry in entries {
            let host: String
            do {
                host = try HostName.normalize(entry.key, allowing: [.ipAddress, .wildcard])
            } catch {
                throw .malformedValue(reason: "key \(error)")
            }
            guard result[host] == nil else {
                throw .malformedValue(reason: "host '\(host)' is listed more than once")
            }
            guard !entry.values.isEmpty else {
                throw .malformedValue(reason: "host '\(host)' has no pins")
            }
            var pins: [String] = []
            for value in entry.values {
                let pin: String
                do {
                    pin = try SPKIPin.normalize(value)
                } catch {
                    throw .malformedValue(reason: "host '\(host)': \(error)")
                }
                if !pins.contains(pin) { pins.append(pin) }
            }
            result[host] = pins
        }
        return result
    }
}
