extension DNSCache {
    /// Every live entry, most recently used first. Entries beyond the stale window are left out
    /// (they are only freed lazily).
    public func snapshot(now: Instant) -> [CacheEntrySnapshot] {
        let now = offset(now)
        return slotsByRecency().compactMap { slot -> CacheEntrySnapshot? in
            if case .miss = classify(slot, now: now) { return nil }
            let entry = entries[slot]
            let remaining = entry.expiresAt - now
            switch entry.value {
            case .answer(let answer)?:
                return CacheEntrySnapshot(
                    name: entry.name, ipv4: answer.ipv4, ipv6: answer.ipv6, ttl: entry.ttl, remaining: remaining,
                    negative: nil, hits: entry.hits, stale: remaining <= .zero, refreshing: entry.refreshing,
                    serverIP: answer.serverIP
                )
            case .failure(let failure)?:
                return CacheEntrySnapshot(
                    name: entry.name, ipv4: [], ipv6: [], ttl: entry.ttl, remaining: remaining,
                    negative: failure.kind, hits: entry.hits, stale: false, refreshing: entry.refreshing,
                    serverIP: nil
                )
            case nil:
                return nil
            }
        }
    }

    /// Positive answers still worth keeping, least recently used first, for the cache file.
    func persistableEntries(now: Instant) -> [(name: String, answer: ResolvedAnswer, ttl: Duration, remaining: Duration)] {
        let now = offset(now)
        return slotsByRecency().reversed().compactMap { slot in
            guard case .answer(let answer)? = entries[slot].value else { return nil }
            if case .miss = classify(slot, now: now) { return nil }
            return (entries[slot].name, answer, entries[slot].ttl, entries[slot].expiresAt - now)
        }
    }
}
