/// Background refresh bookkeeping. The cache only decides *which* names need refreshing and
/// marks them, so that exactly one refresh per name is ever started; the resolver runs them.
extension DNSCache {
    /// Positive answers whose age has passed `prefetchFraction` of their TTL and that are worth
    /// keeping warm: listed in `keepalive`, or hit at least `hotThreshold` times since stored.
    /// The returned names are marked refreshing; report the outcome with `store` or `refreshFailed`.
    public mutating func namesDueForPrefetch(now: Instant, keepalive: Set<String>, hotThreshold: Int) -> [String] {
        let now = offset(now)
        var due: [String] = []
        for slot in slotsByRecency() {
            if let deadline = prefetchDeadline(of: entries[slot], now: now, keepalive: keepalive, hotThreshold: hotThreshold),
               deadline <= now {
                entries[slot].refreshing = true
                due.append(entries[slot].name)
            }
        }
        return due
    }

    /// When `namesDueForPrefetch` will next return something, given no other change; `nil` if
    /// nothing is waiting. May be in the past when a name turned hot after its prefetch point.
    public func nextPrefetchDeadline(now: Instant, keepalive: Set<String>, hotThreshold: Int) -> Instant? {
        let now = offset(now)
        var earliest: Duration?
        for entry in entries {
            if let deadline = prefetchDeadline(of: entry, now: now, keepalive: keepalive, hotThreshold: hotThreshold),
               earliest.map({ deadline < $0 }) ?? true {
                earliest = deadline
            }
        }
        return earliest.map(instant)
    }

    private func prefetchDeadline(of entry: DNSCacheEntry, now: Duration, keepalive: Set<String>, hotThreshold: Int) -> Duration? {
        if let due = entry.refreshDueAt, case .answer? = entry.value, !entry.refreshing {
            // Asked for once (network change): any servable answer, hot or not.
            guard configuration.immutable || now < entry.expiresAt + configuration.maxStale else { return nil }
            return max(due, entry.retryAt ?? due)
        }
        guard case .answer? = entry.value, !entry.refreshing, entry.ttl > .zero else {
            // Free slots, negative answers, and zero TTLs (whose prefetch point would be "now"
            // forever: a busy loop against the service).
            return nil
        }
        let isKeepalive = keepalive.contains(entry.name)
        guard isKeepalive || entry.hits >= hotThreshold else { return nil }
        if !isKeepalive && !configuration.immutable && entry.expiresAt + configuration.maxStale <= now {
            // A hot name nobody asked for during the whole stale window has gone cold.
            return nil
        }
        let prefetchAt = entry.storedAt + entry.ttl * configuration.prefetchFraction
        if let retryAt = entry.retryAt, retryAt > prefetchAt {
            return retryAt
        }
        return prefetchAt
    }

    /// Marks `name` refreshing because a stale answer was served; `false` when there is nothing to
    /// refresh, a refresh is already running, or the last one failed less than
    /// `refreshRetryInterval` ago.
    public mutating func beginRefresh(_ name: String, now: Instant) -> Bool {
        guard let slot = index[name.cacheKey], !entries[slot].refreshing else { return false }
        if let retryAt = entries[slot].retryAt, offset(now) < retryAt {
            return false
        }
        entries[slot].refreshing = true
        return true
    }

    /// A refresh ended without a new answer: the old one stays, and the next attempt waits
    /// `refreshRetryInterval`.
    public mutating func refreshFailed(_ name: String, now: Instant) {
        guard let slot = index[name.cacheKey] else { return }
        entries[slot].refreshing = false
        entries[slot].retryAt = offset(now) + configuration.refreshRetryInterval
        // A network-change refresh is tried once: an unreachable service is not asked again for
        // every cached name. One that was already running when the network changed does not count.
        if entries[slot].refreshAgain {
            entries[slot].refreshAgain = false
        } else {
            entries[slot].refreshDueAt = nil
        }
    }

    /// Marks every answer that can still be served for one background refresh, spread out: the
    /// first `groupSize` names (most recently used first) are due at `now`, the next group
    /// `spacing` later, and so on. Answers stay and are served meanwhile. Returns how many names
    /// were marked.
    public mutating func scheduleRefreshOfAll(now: Instant, groupSize: Int, spacing: Duration) -> Int {
        let now = offset(now)
        let groupSize = max(1, groupSize)
        var marked = 0
        for slot in slotsByRecency() {
            guard case .answer? = entries[slot].value else { continue }
            guard configuration.immutable || now < entries[slot].expiresAt + configuration.maxStale else { continue }
            entries[slot].refreshDueAt = now + spacing * (marked / groupSize)
            if entries[slot].refreshing { entries[slot].refreshAgain = true }
            marked += 1
        }
        return marked
    }
}
