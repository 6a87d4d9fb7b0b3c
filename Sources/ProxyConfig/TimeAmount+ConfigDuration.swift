import NIOCore

extension TimeAmount {
    /// Parses a configuration duration: a decimal number with an optional unit
    /// `ms`, `s`, `m` or `h` ("250ms", "3s", "1.5s", "5m", "1h"); a bare number
    /// means seconds ("0.5"). The result must be greater than zero because most
    /// duration options are timeouts, where zero would mean "fail immediately".
    ///
    /// Arithmetic is done on integers so "0.1s" is exactly 100,000,000 ns;
    /// fractions below a nanosecond are truncated.
    public init(configDuration text: String) throws(ConfigurationError) {
        try self.init(configDuration: text, allowingZero: false)
    }

    /// Like `init(configDuration:)`, but with `allowingZero` a zero duration
    /// ("0", "0s") is accepted, for options where 0 means "off" or "no limit".
    public init(configDuration text: String, allowingZero: Bool) throws(ConfigurationError) {
        let expected = "expected a duration like 500ms, 3s, 1.5s, 5m or 1h (a bare number means seconds)"
        let units: [(suffix: String, nanoseconds: Int64)] = [
            // "ms" must be tried before "m" and "s".
            ("ms", 1_000_000), ("s", 1_000_000_000), ("m", 60_000_000_000), ("h", 3_600_000_000_000),
        ]
        var number = Substring(text)
        var unit: Int64 = 1_000_000_000
        for candidate in units where number.hasSuffix(candidate.suffix) {
            number = number.dropLast(candidate.suffix.count)
            unit = candidate.nanoseconds
            break
        }

        let parts = number.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let isDigits = { (part: Substring) in !part.isEmpty && part.allSatisfy { $0.isASCII && $0.isNumber } }
        guard parts.count >= 1, isDigits(parts[0]), parts.count == 1 || isDigits(parts[1]) else {
            throw .malformedValue(reason: expected)
        }
        // 12 digits keep Int64(_:) from failing; nobody means a timeout of 10^12 seconds.
        guard parts[0].count <= 12 else {
            throw .malformedValue(reason: "duration is too long")
        }
        let whole = Int64(parts[0])!
        var (total, overflow) = whole.multipliedReportingOverflow(by: unit)
        if parts.count == 2, !overflow {
            // Digits past the 12th change the result by under 4 ns even for hours; dropping them keeps the maths in range.
            let fraction = parts[1].prefix(12)
            var scale: UInt64 = 1
            for _ in fraction { scale *= 10 }
            // unit * fraction can exceed 64 bits, so multiply at double width; the quotient is < unit.
            let product = UInt64(unit).multipliedFullWidth(by: UInt64(fraction)!)
            let nanos = Int64(scale.dividingFullWidth(product).quotient)
            (total, overflow) = total.addingReportingOverflow(nanos)
        }
        guard !overflow else {
            throw .malformedValue(reason: "duration is too long")
        }
        guard total > 0 || allowingZero else {
            throw .malformedValue(reason: "duration must be greater than zero")
        }
        self = .nanoseconds(total)
    }
}

extension TimeAmount {
    /// Configuration text that parses back to this duration: "0", "1h", "5m",
    /// "3s", "250ms" (the largest unit that divides it), else seconds with a
    /// fraction ("0.0000015s"). Used to show effective settings.
    var configDescription: String {
        let ns = nanoseconds
        if ns == 0 { return "0" }
        for (suffix, unit) in [("h", Int64(3_600_000_000_000)), ("m", 60_000_000_000), ("s", 1_000_000_000), ("ms", 1_000_000)] where ns % unit == 0 {
            return "\(ns / unit)\(suffix)"
        }
        // Seconds with up to nine fraction digits, trailing zeros dropped.
        var fraction = String(ns % 1_000_000_000)
        fraction = String(repeating: "0", count: 9 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(ns / 1_000_000_000).\(fraction)s"
    }
}
