/// Destinations in NO_PROXY syntax: a `pac-bypass` entry (what the PAC file sends `DIRECT`) and
/// the pattern of a `route` rule match alike. curl's (and Python's) meaning:
///
/// - `example.org`, `.example.org` or `*.example.org`: that domain and every subdomain at any depth
///   (`www.example.org`, `a.b.example.org`), any case, trailing dot ignored; not `notexample.org`.
///   (curl itself knows no `*.` form; it is read like the leading dot, as Go's NO_PROXY allows it.)
/// - `10.0.0.0/8`, `fd00::/8`, `192.0.2.7`, `2001:db8::1`, `[2001:db8::1]`: IP-literal destinations
///   in that block. A name is never resolved to test it against a block (that would send DNS
///   questions to the local resolver).
/// - `*`: everything.
public enum DestinationPattern: Sendable, Hashable {
    /// `*`: every destination.
    case everything
    /// A domain and all its subdomains; lowercased, without the leading "." or "*.".
    case domain(String)
    case block(CIDR)

    /// Parses one entry; explains what is wrong.
    public init(parsing text: String) throws(ConfigurationError) {
        if text == "*" {
            self = .everything
            return
        }
        if text.contains("/") || IPAddress(text) != nil || (text.hasPrefix("[") && text.hasSuffix("]")) {
            var blockText = text
            if blockText.hasPrefix("["), blockText.hasSuffix("]") { blockText = String(blockText.dropFirst().dropLast()) }
            self = .block(try CIDR(parsing: blockText))
            return
        }
        var name = text
        if name.hasPrefix("*.") {
            name.removeFirst(2)
        } else if name.hasPrefix(".") {
            name.removeFirst()
        }
        do {
            self = .domain(try HostName.normalize(name))
        } catch {
            throw .malformedValue(reason: "expected a domain (example.org, .example.org or *.example.org: it and its subdomains), a CIDR block or IP address (10.0.0.0/8, 2001:db8::1), or *: \(error)")
        }
    }
}

extension DestinationPattern {
    /// Whether `host` (a name or IP literal as a client asked for it: any case, maybe a trailing
    /// dot or IPv6 brackets) is one of these destinations. Names match domains only, IP literals
    /// blocks only: a name is never resolved to test it.
    public func matches(host: String) -> Bool {
        switch self {
        case .everything:
            return true
        case .block(let block):
            var text = host
            if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
            guard let address = IPAddress(text) else { return false }
            return block.contains(address.unmappedIPv4 ?? address) || block.contains(address)
        case .domain(let domain):
            var name = host.lowercased()
            if name.hasSuffix(".") { name.removeLast() }
            guard name.utf8.count >= domain.utf8.count, name.hasSuffix(domain) else { return false }
            return name.utf8.count == domain.utf8.count || name.utf8.dropLast(domain.utf8.count).last == UInt8(ascii: ".")
        }
    }
}

extension DestinationPattern: CustomStringConvertible {
    /// The canonical text: "*", "example.org", "10.0.0.0/8".
    public var description: String {
        switch self {
        case .everything: "*"
        case .domain(let domain): domain
        case .block(let block): block.description
        }
    }
}
