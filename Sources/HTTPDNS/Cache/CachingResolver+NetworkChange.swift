extension CachingResolver {
    /// The host's network changed: answers learned on the old network may point at the wrong
    /// place (HTTPDNS services answer by the client's address). Every answer that can still be
    /// served is refreshed once in the background, spread over time (`networkRefreshSpacing` per
    /// request), while the old answers keep being served: the cache is never wiped, which would
    /// turn the next requests into a burst of queries. Returns how many names were marked.
    @discardableResult
    public func refreshAllInBackground() -> Int {
        let now = clock.now
        let groupSize = batchQuery == nil ? 1 : configuration.batchSize
        let marked = state.withLockedValue { state in
            state.cache.scheduleRefreshOfAll(now: now, groupSize: groupSize, spacing: configuration.networkRefreshSpacing)
        }
        if marked > 0 { prefetchWake.signal() }
        return marked
    }
}
