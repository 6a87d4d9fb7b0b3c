extension IPText {
    /// Gathers answer addresses by their real family (a provider that puts an IPv6
    /// address in `ips` still gets it used correctly), canonical and without duplicates.
    struct Collector {
        private(set) var ipv4: [String] = []
        private(set) var ipv6: [String] = []
        private var seen: Set<String> = []

        var isEmpty: Bool { ipv4.isEmpty && ipv6.isEmpty }

        /// Adds `text` if it is a valid address; returns whether it was valid.
        @discardableResult
        mutating func add(_ text: String) -> Bool {
            guard let (canonical, family) = IPText.canonical(text) else { return false }
            insert(canonical, family)
            return true
        }

        /// Adds elements of a JSON array that are address strings; others are skipped.
        mutating func addAll(_ value: Any?) {
            guard let list = value as? [Any] else { return }
            for item in list {
                if let text = item as? String { add(text) }
            }
        }

        /// Adds a canonical address rendered from wire bytes.
        mutating func insert(_ canonical: String, _ family: IPText.Family) {
            guard seen.insert(canonical).inserted else { return }
            switch family {
            case .v4: ipv4.append(canonical)
            case .v6: ipv6.append(canonical)
            }
        }
    }
}
