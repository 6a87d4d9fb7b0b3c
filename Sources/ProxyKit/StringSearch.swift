#if canImport(FoundationEssentials) && !canImport(Darwin)
extension StringProtocol {
    /// The first occurrence of `needle`, compared by characters. Full Foundation's
    /// `range(of:)` (locale-aware, and with it ICU) is not linked; FoundationEssentials lacks it.
    package func range(of needle: some StringProtocol) -> Range<Index>? {
        guard !needle.isEmpty else { return nil }
        var start = startIndex
        while start != endIndex {
            if self[start...].hasPrefix(needle) { return start..<index(start, offsetBy: needle.count) }
            formIndex(after: &start)
        }
        return nil
    }
}
#endif
