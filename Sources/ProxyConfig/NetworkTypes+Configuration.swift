// The network value types live in their own leaf module (HTTPDNS uses them without the
// configuration); every module that imports ProxyConfig keeps seeing them.
@_exported import NetworkTypes

// The configuration's spelling of their parsers: errors as `ConfigurationError`, which the loader
// completes with the option's name and the value's source.

extension IPAddress {
    /// Parses like `init?(_:)` but explains what is wrong.
    public init(parsing text: String) throws(ConfigurationError) {
        do { self = try IPAddress(text: text) } catch { throw .malformedValue(reason: error.reason) }
    }
}

extension CIDR {
    public init(parsing text: String) throws(ConfigurationError) {
        do { self = try CIDR(text: text) } catch { throw .malformedValue(reason: error.reason) }
    }
}

extension HostPort {
    public init(parsing text: String) throws(ConfigurationError) {
        do { self = try HostPort(text: text) } catch { throw .malformedValue(reason: error.reason) }
    }
}

extension HostName {
    /// A validated host, lowercased and without a trailing dot; IP literals in canonical form.
    static func normalize(_ text: String, allowing allowed: Allowed = []) throws(ConfigurationError) -> String {
        do { return try normalized(text, allowing: allowed) } catch { throw .malformedValue(reason: error.reason) }
    }
}
