import ProxyConfig

/// Local records in hosts-file format (`/etc/hosts`, dnsmasq's `addn-hosts`, CoreDNS's `hosts`
/// plugin): `IP name [aliases...]` per line, `#` to the end of a line a comment, blank lines
/// ignored, fields separated by spaces or tabs, CRLF line ends accepted. Names are kept lowercased
/// without a trailing dot; several lines for one name add addresses to it (in file order,
/// duplicates dropped). A value: the DNS listener and the proxy's dial path read one version.
package struct HostsFile: Sendable, Equatable {
    /// How much of a file is read, and how many name-address pairs it may hold: a file past either
    /// is refused as a whole rather than read in part.
    package struct Limits: Sendable, Equatable {
        package var maxBytes: Int
        package var maxEntries: Int

        package init(maxBytes: Int = 8 << 20, maxEntries: Int = 100_000) {
            self.maxBytes = maxBytes
            self.maxEntries = maxEntries
        }
    }

    /// A line the file cannot be used with (line 0: the file as a whole).
    package struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        package var line: Int
        package var reason: String

        package init(line: Int, reason: String) {
            self.line = line
            self.reason = reason
        }

        package var description: String { line == 0 ? reason : "line \(line): \(reason)" }
    }

    /// A name's addresses, each family in file order (canonical text).
    package struct Addresses: Sendable, Equatable {
        package var ipv4: [String] = []
        package var ipv6: [String] = []

        package init(ipv4: [String] = [], ipv6: [String] = []) {
            self.ipv4 = ipv4
            self.ipv6 = ipv6
        }

        mutating func add(_ ip: IPAddress) -> Bool {
            let text = ip.description
            if ip.isIPv4 {
                guard !ipv4.contains(text) else { return false }
                ipv4.append(text)
            } else {
                guard !ipv6.contains(text) else { return false }
                ipv6.append(text)
            }
            return true
        }

        package func holds(_ ip: IPAddress) -> Bool {
            (ip.isIPv4 ? ipv4 : ipv6).contains(ip.description)
        }
    }

    private var records: [String: Addresses] = [:]
    /// Name-address pairs (what `Limits.maxEntries` counts).
    package private(set) var entryCount = 0

    package init() {}

    /// Names in the file.
    package var nameCount: Int { records.count }

    /// The addresses of `name` (any letter case, a trailing dot allowed); nil when the file does
    /// not name it.
    package func addresses(of name: String) -> Addresses? {
        guard !records.isEmpty else { return nil }
        var key = name.lowercased()
        if key.hasSuffix(".") { key.removeLast() }
        return records[key]
    }

    /// Parses `bytes`; every line it cannot use is a problem (with its number), the rest is kept.
    package static func parse(_ bytes: some Collection<UInt8>, limits: Limits = Limits()) -> (records: HostsFile, problems: [Problem]) {
        var file = HostsFile()
        var problems: [Problem] = []
        guard bytes.count <= limits.maxBytes else {
            return (file, [Problem(line: 0, reason: "larger than \(limits.maxBytes) bytes")])
        }
        var number = 0
        for rawLine in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            number += 1
            var line = rawLine[...]
            if let hash = line.firstIndex(of: UInt8(ascii: "#")) { line = line[..<hash] }
            let fields = line.split(whereSeparator: { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\r") })
            guard let first = fields.first else { continue }
            let addressText = String(decoding: first, as: UTF8.self)
            let ip: IPAddress
            do {
                ip = try IPAddress(text: addressText)
            } catch {
                problems.append(Problem(line: number, reason: "'\(addressText)' is not an IP address: \(error.reason)"))
                continue
            }
            guard fields.count > 1 else {
                problems.append(Problem(line: number, reason: "no host name after \(addressText)"))
                continue
            }
            var names: [String] = []
            for field in fields.dropFirst() {
                var name = String(decoding: field, as: UTF8.self).lowercased()
                if name.hasSuffix(".") { name.removeLast() }
                guard HostName.isValidName(name), IPAddress(name) == nil else {
                    problems.append(Problem(line: number, reason: "'\(String(decoding: field, as: UTF8.self))' is not a valid host name"))
                    names = []
                    break
                }
                names.append(name)
            }
            for name in names {
                if file.records[name, default: Addresses()].add(ip) { file.entryCount += 1 }
            }
            if file.entryCount > limits.maxEntries {
                return (HostsFile(), [Problem(line: number, reason: "more than \(limits.maxEntries) name-address entries")])
            }
        }
        return (file, problems)
    }
}
