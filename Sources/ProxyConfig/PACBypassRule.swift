/// A `pac-bypass` entry: destinations the PAC file (`/proxy.pac`) sends `DIRECT` instead of through
/// the proxy. NO_PROXY syntax:
///
/// - `intranet.example.com`: that host only (any case, trailing dot ignored).
/// - `.example.com` or `*.example.com`: every subdomain of example.com, at any depth
///   (`a.example.com`, `a.b.example.com`), not `example.com` itself (list it too for that).
/// - `10.0.0.0/8`, `fd00::/8`, `192.0.2.7`: IP-literal destinations in that block. A name is never
///   resolved to test it against a block (that would send DNS questions to the local resolver).
public enum PACBypassRule: Sendable, Hashable {
    case host(String)
    /// Lowercased, without the leading "." or "*.".
    case subdomainsOf(String)
    case block(CIDR)

    /// Parses one entry; explains what is wrong.
    public init(parsing text: String) throws(ConfigurationError) {
        let trimmed = text
        if trimmed.contains("/") || IPAddress(trimmed) != nil
            || (trimmed.hasPrefix("[") && trimmed.hasSuffix("]"))
        {
            var blockText = trimmed
            if blockText.hasPrefix("["), blockText.hasSuffix("]") { blockText = String(blockText.dropFirst().dropLast()) }
            self = .block(try CIDR(parsing: blockText))
            return
        }
        var name = trimmed
        var subdomains = false
        if name.hasPrefix("*.") {
            name.removeFirst(2)
            subdomains = true
        } else if name.hasPrefix(".") {
            name.removeFirst()
            subdomains = true
        }
        do {
            let normalized = try HostName.normalize(name)
            self = subdomains ? .subdomainsOf(normalized) : .host(normalized)
        } catch {
            throw .malformedValue(reason: "expected a host (intranet.example.com), a domain suffix (.example.com or *.example.com) or a CIDR block (10.0.0.0/8): \(error)")
        }
    }
}

extension PACBypassRule: CustomStringConvertible {
    /// The canonical text: "intranet.example.com", ".example.com", "10.0.0.0/8".
    public var description: String {
        switch self {
        case .host(let host): host
        case .subdomainsOf(let domain): "." + domain
        case .block(let block): block.description
        }
    }
}
