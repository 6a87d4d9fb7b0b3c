extension Duration {
    /// Seconds as a floating-point number, for JSON (the cache file, admin snapshots) and for
    /// millisecond statistics.
    var cacheSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
