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
}
