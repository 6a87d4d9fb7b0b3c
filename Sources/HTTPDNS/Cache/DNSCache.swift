/// The HTTPDNS answer cache: TTL clamping, negative entries, serve-stale, LRU eviction and the
/// bookkeeping for background refresh. A plain value with no clock and no I/O: every operation
/// takes `now`, so it is tested alone and the `CachingResolver` wraps it in a lock.
///
/// Storage is a dictionary from name to slot, an array of entries, and an intrusive doubly linked
/// list over the slots (most recently used at `head`) in a parallel array, so lookup, store, touch
/// and eviction are O(1). Times are kept as offsets from the first instant the cache saw.
public struct DNSCache<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration {
    public typealias Configuration = DNSCacheConfiguration

    /// Clamps, caps and capacity; `reconfigure` changes them for answers stored from then on.
    public private(set) var configuration: Configuration
    var entries: [DNSCacheEntry] = []
    var links: [DNSCacheLink] = []
    var freeSlots: [Int] = []
    var index: [String: Int] = [:]
    /// Most recently used.
    var head = DNSCache.none
    /// Least recently used: evicted first.
    var tail = DNSCache.none
    /// The zero of the stored offsets; set by the first insert.
    private var epoch: Instant?
    /// Unreported hits of entries that were removed or evicted, until they are taken.
    var unreportedOfRemoved: [String: HitCounts] = [:]

    static var none: Int { -1 }

    /// New clamps and caps for answers stored from now on (entries keep the expiry they got); a
    /// smaller capacity evicts as new names arrive.
    public mutating func reconfigure(_ configuration: Configuration) {
        precondition(configuration.capacity < Int(Int32.max), "DNS cache capacity too large")
        self.configuration = configuration
    }

    public init(configuration: Configuration = .init()) {
        precondition(configuration.capacity < Int(Int32.max), "DNS cache capacity too large")
        self.configuration = configuration
        index.reserveCapacity(min(configuration.capacity, 1 << 16))
    }

    public var count: Int { index.count }

    public func contains(_ name: String) -> Bool { index[name.cacheKey] != nil }

    /// `instant` as an offset from the epoch. Without an epoch nothing is stored, so any value works.
    func offset(_ instant: Instant) -> Duration {
        epoch.map { $0.duration(to: instant) } ?? .zero
    }

    /// Only called for offsets of stored entries, which exist only once the epoch is set.
    func instant(_ offset: Duration) -> Instant {
        epoch!.advanced(by: offset)
    }

    // MARK: Lookup

    /// Looks `name` up, moving it to the front of the LRU order and counting the hit.
    public mutating func lookup(_ name: String, now: Instant) -> Lookup {
        lookupCountingHit(name.cacheKey, now: now).lookup
    }

    /// `lookup` for a key that is already normalised, also returning the entry's hit count after
    /// this hit (0 on a miss) so the resolver can tell when a name turns hot.
    mutating func lookupCountingHit(_ key: String, now: Instant) -> (lookup: Lookup, hits: Int) {
        guard let slot = index[key] else { return (.miss, 0) }
        let lookup = classify(slot, now: offset(now))
        if case .miss = lookup {
            // Beyond the stale window: the answer is useless, free the slot now.
            unlink(slot)
            return (.miss, 0)
        }
        entries[slot].hits &+= 1
        switch lookup {
        case .fresh: entries[slot].unreported.fresh &+= 1
        case .stale: entries[slot].unreported.stale &+= 1
        case .negative: entries[slot].unreported.negative &+= 1
        case .miss: break
        }
        moveToFront(slot)
        return (lookup, entries[slot].hits)
    }

    /// The hits counted since the last call, by name, and forgets them: the statistics are kept
    /// by `ResolverStats`, but a hit only bumps a counter in its entry (no second lock, no second
    /// dictionary lookup on the hot path) and the counts move over in batches.
    mutating func takeUnreportedHits() -> [(name: String, hits: HitCounts)] {
        var out = takeUnreportedHitsOfRemoved()
        for slot in entries.indices where entries[slot].value != nil && !entries[slot].unreported.isZero {
            out.append((entries[slot].name, entries[slot].unreported))
            entries[slot].unreported = HitCounts()
        }
        return out
    }

    /// `takeUnreportedHits` for one name (a normalised key).
    mutating func takeUnreportedHits(of key: String) -> HitCounts {
        var counts = unreportedOfRemoved.removeValue(forKey: key) ?? HitCounts()
        if let slot = index[key], entries[slot].value != nil {
            counts.add(entries[slot].unreported)
            entries[slot].unreported = HitCounts()
        }
        return counts
    }

    /// The part of `takeUnreportedHits` for entries that are gone.
    mutating func takeUnreportedHitsOfRemoved() -> [(name: String, hits: HitCounts)] {
        defer { unreportedOfRemoved.removeAll() }
        return unreportedOfRemoved.map { (name: $0.key, hits: $0.value) }
    }

    /// Keeps the unreported hits of an entry that is going away.
    private mutating func keepUnreported(_ slot: Int) {
        let counts = entries[slot].unreported
        guard !counts.isZero, entries[slot].value != nil else { return }
        unreportedOfRemoved[entries[slot].name, default: HitCounts()].add(counts)
    }

    /// Like `lookup`, but leaves LRU order and hit counts alone (for the resolver's own decisions).
    public func peek(_ name: String, now: Instant) -> Lookup {
        guard let slot = index[name.cacheKey] else { return .miss }
        return classify(slot, now: offset(now))
    }

    func classify(_ slot: Int, now: Duration) -> Lookup {
        let expiresAt = entries[slot].expiresAt
        switch entries[slot].value {
        case .answer(let answer)?:
            if now < expiresAt {
                return .fresh(answer, remaining: expiresAt - now)
            }
            let age = now - expiresAt
            if configuration.immutable || age < configuration.maxStale {
                return .stale(answer, age: age)
            }
            return .miss
        case .failure(let failure)?:
            return now < expiresAt ? .negative(failure) : .miss
        case nil:
            return .miss
        }
    }

    // MARK: Store and remove

    /// Stores a successful answer, TTL clamped to `[minTTL, maxTTL]`. Replaces any previous entry
    /// (including a negative one) and resets its hit count and refresh state.
    public mutating func store(_ name: String, answer: ResolvedAnswer, now: Instant) {
        let ttl = configuration.clamp(answer.ttl)
        insert(name.cacheKey, value: .answer(answer), ttl: ttl, storedAt: now)
    }

    /// Stores a negative answer for `min(failure.negativeTTL ?? cap, cap)`. The caller decides
    /// which failures are worth caching (see `ResolveFailure.isCacheable`).
    public mutating func storeNegative(_ name: String, failure: ResolveFailure, now: Instant) {
        let ttl = configuration.negativeTTL(for: failure)
        let key = name.cacheKey
        guard ttl > .zero else {
            // A zero negative TTL means "do not cache"; drop any older answer all the same.
            remove(key)
            return
        }
        insert(key, value: .failure(failure), ttl: ttl, storedAt: now)
    }

    /// Re-inserts an answer whose expiry is already known (a warm start from the cache file).
    /// Inserted at the front, so restoring least recently used first keeps the saved order.
    mutating func restore(_ name: String, answer: ResolvedAnswer, ttl: Duration, expiresAt: Instant) {
        insert(name.cacheKey, value: .answer(answer), ttl: ttl, storedAt: expiresAt.advanced(by: .zero - ttl))
    }

    public mutating func remove(_ name: String) {
        if let slot = index[name.cacheKey] {
            unlink(slot)
        }
    }

    public mutating func removeAll() {
        for slot in entries.indices { keepUnreported(slot) }
        entries.removeAll()
        links.removeAll()
        freeSlots.removeAll()
        index.removeAll(keepingCapacity: true)
        head = Self.none
        tail = Self.none
    }

    private mutating func insert(_ key: String, value: DNSCacheEntry.Value, ttl: Duration, storedAt: Instant) {
        if epoch == nil {
            epoch = storedAt
        }
        let stored = offset(storedAt)
        let entry = DNSCacheEntry(
            name: key, value: value, storedAt: stored, expiresAt: stored + ttl, ttl: ttl,
            hits: 0, refreshing: false, retryAt: nil
        )
        if let slot = index[key] {
            var entry = entry
            entry.unreported = entries[slot].unreported
            if entries[slot].refreshAgain {
                // answered over the path of before the network change: refresh once more
                entry.refreshDueAt = entries[slot].refreshDueAt
            }
            entries[slot] = entry
            moveToFront(slot)
            return
        }
        if index.count >= configuration.capacity {
            unlink(tail)
        }
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            entries[slot] = entry
        } else {
            slot = entries.count
            entries.append(entry)
            links.append(DNSCacheLink(prev: -1, next: -1))
        }
        index[key] = slot
        linkAtFront(slot)
    }

    // MARK: Linked list

    private mutating func moveToFront(_ slot: Int) {
        guard slot != head else { return }
        detach(slot)
        linkAtFront(slot)
    }

    private mutating func linkAtFront(_ slot: Int) {
        links[slot] = DNSCacheLink(prev: -1, next: Int32(head))
        if head != Self.none {
            links[head].prev = Int32(slot)
        }
        head = slot
        if tail == Self.none {
            tail = slot
        }
    }

    private mutating func detach(_ slot: Int) {
        let prev = Int(links[slot].prev)
        let next = Int(links[slot].next)
        if prev != Self.none { links[prev].next = Int32(next) } else { head = next }
        if next != Self.none { links[next].prev = Int32(prev) } else { tail = prev }
    }

    /// Removes the entry in `slot` entirely.
    mutating func unlink(_ slot: Int) {
        keepUnreported(slot)
        detach(slot)
        index[entries[slot].name] = nil
        // Drop the strings and arrays now rather than when the slot is reused.
        entries[slot].name = ""
        entries[slot].value = nil
        entries[slot].unreported = HitCounts()
        freeSlots.append(slot)
    }

    /// Slots from most to least recently used.
    func slotsByRecency() -> [Int] {
        var result: [Int] = []
        result.reserveCapacity(index.count)
        var slot = head
        while slot != Self.none {
            result.append(slot)
            slot = Int(links[slot].next)
        }
        return result
    }

    /// Names from most to least recently used (for tests and the admin page's order).
    public var namesByRecency: [String] {
        slotsByRecency().map { entries[$0].name }
    }
}
