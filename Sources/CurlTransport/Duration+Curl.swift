extension Duration {
    /// Whole milliseconds for libcurl's *_MS options, rounded up so a tiny positive duration does
    /// not become 0 (which libcurl reads as "no limit"), and capped far below `long` overflow.
    var curlMilliseconds: Int {
        let (seconds, attoseconds) = components
        if seconds < 0 || (seconds == 0 && attoseconds <= 0) { return 0 }
        let maxSeconds: Int64 = 100_000_000
        if seconds >= maxSeconds { return Int(maxSeconds * 1000) }
        let perMillisecond: Int64 = 1_000_000_000_000_000
        let fraction = (attoseconds + perMillisecond - 1) / perMillisecond
        return Int(seconds * 1000 + fraction)
    }

}
