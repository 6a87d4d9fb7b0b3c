import Logging
import ServiceLifecycle

extension CachingResolver {
    /// Loads the cache file, preloads, then runs queries, refreshes, prefetch and persistence until
    /// cancelled or gracefully shut down. On the way out it fails every waiting caller with
    /// `.cancelled` and writes the cache file one last time.
    public func run() async throws {
        let started = state.withLockedValue { state -> Bool in
            guard state.phase == .idle else { return false }
            state.phase = .running
            return true
        }
        precondition(started, "CachingResolver.run() must be called once")

        if let path = configuration.cacheFile {
            load(from: path)
        }
        let preloading = claimPreload()
        await cancelWhenGracefulShutdown {
            await self.runBackgroundWork(preloading: preloading)
        }
        stop()
    }

    private func runBackgroundWork(preloading: [String]) async {
        await withDiscardingTaskGroup { group in
            if !preloading.isEmpty {
                group.addTask { await self.preload(preloading) }
            }
            if let path = configuration.cacheFile {
                group.addTask { await self.persistPeriodically(to: path) }
            }
            group.addTask { await self.prefetchLoop() }
            // Ends when this task is cancelled (AsyncStream iteration is cancellation-aware).
            for await names in jobs {
                group.addTask { await self.execute(names) }
            }
            group.cancelAll()
        }
    }

    private func stop() {
        let waiters = state.withLockedValue { state -> [Waiter] in
            state.phase = .stopped
            defer { state.inflight.removeAll() }
            return state.inflight.values.flatMap { $0 }
        }
        jobSink.finish()
        for waiter in waiters {
            waiter.continuation.resume(returning: .failure(.resolverStopped))
        }
        if let path = configuration.cacheFile {
            save(to: path)
        }
        logger.debug("caching resolver stopped", metadata: ["resolver.failed_waiters": "\(waiters.count)"])
    }

    // MARK: Queries

    /// Resolves `names` (already marked in flight): one batch request when the provider has one,
    /// else one query per name, concurrently.
    func execute(_ names: [String]) async {
        if names.count > 1, let batchQuery {
            await executeBatch(names, batchQuery)
            return
        }
        await withDiscardingTaskGroup { group in
            for name in names {
                group.addTask { await self.executeSingle(name) }
            }
        }
    }

    private func executeSingle(_ key: String) async {
        let start = clock.now
        let result: Result<ResolvedAnswer, ResolveFailure>
        do {
            result = .success(try await query(key))
        } catch {
            result = .failure(ResolveFailure(error))
        }
        complete(key, result, rtt: start.duration(to: clock.now))
    }

    private func executeBatch(_ keys: [String], _ batchQuery: BatchQuery) async {
        let start = clock.now
        let results: [String: Result<ResolvedAnswer, ResolveFailure>]
        do {
            results = try await batchQuery(keys)
        } catch {
            let failure = ResolveFailure(error)
            let rtt = start.duration(to: clock.now)
            for key in keys {
                complete(key, .failure(failure), rtt: rtt)
            }
            return
        }
        let rtt = start.duration(to: clock.now)
        // The service may echo names in another case or with the root dot.
        var byKey: [String: Result<ResolvedAnswer, ResolveFailure>] = [:]
        for (name, result) in results {
            byKey[name.cacheKey] = result
        }
        var missing: [String] = []
        for key in keys {
            if let result = byKey[key] {
                complete(key, result, rtt: rtt)
            } else {
                missing.append(key)
            }
        }
        guard !missing.isEmpty else { return }
        logger.debug("batch answer left names out; querying them one by one", metadata: ["resolver.missing": "\(missing.count)"])
        await withDiscardingTaskGroup { group in
            for key in missing {
                group.addTask { await self.executeSingle(key) }
            }
        }
    }

    /// Stores the outcome of `key`'s query and answers everyone waiting for it.
    private func complete(_ key: String, _ result: Result<ResolvedAnswer, ResolveFailure>, rtt: Duration) {
        defer { reportHitsOfRemovedEntriesIfMany() }
        let now = clock.now
        // The name's hits so far are reported before its query, so the statistics' "last source"
        // follows the order things happened in.
        var earlierHits = HitCounts()
        let (waiters, outcome, wakePrefetch) = state.withLockedValue { state -> ([Waiter], Outcome, Bool) in
            earlierHits = state.cache.takeUnreportedHits(of: key)
            let waiters = state.inflight.removeValue(forKey: key) ?? []
            switch result {
            case .success(let answer):
                state.cache.store(key, answer: answer, now: now)
                // A keepalive name has a new prefetch point; hot names must earn it again (unless
                // every name counts as hot).
                let wake = keepalive.contains(key) || configuration.hotThreshold <= 0
                return (waiters, .success(Answered(answer: answer, source: .query)), wake)
            case .failure(let failure) where failure.isCacheable:
                state.cache.storeNegative(key, failure: failure, now: now)
                return (waiters, .failure(failure), false)
            case .failure(let failure):
                // The path to the service failed, not the name: keep whatever answer we had.
                state.cache.refreshFailed(key, now: now)
                switch state.cache.peek(key, now: now) {
                case .fresh(let answer, _):
                    return (waiters, .success(Answered(answer: answer, source: .cache)), true)
                case .stale(let answer, _):
                    return (waiters, .success(Answered(answer: answer, source: .stale)), true)
                case .negative, .miss:
                    return (waiters, .failure(failure), true)
                }
            }
        }
        if case .failure(let failure) = result, failure.kind == .cancelled {
            // Shutting down; not a property of the service worth counting.
        } else {
            stats.recordHits(earlierHits.isZero ? [] : [(key, earlierHits)])
            stats.recordQuery(key, rtt: rtt, result: result)
        }
        if case .failure(let failure) = result {
            logger.debug("HTTPDNS query failed", metadata: [
                "httpdns.host": "\(key)", "error.kind": "\(failure.shortDescription)", "error": "\(failure.message)",
            ])
        }
        for waiter in waiters {
            waiter.continuation.resume(returning: outcome)
        }
        if wakePrefetch {
            prefetchWake.signal()
        }
    }

    // MARK: Preload

    /// Marks the preload and keepalive names that are not already fresh (e.g. from the cache file)
    /// in flight, so requests arriving during preload join it instead of querying again.
    private func claimPreload() -> [String] {
        var seen = Set<String>()
        let names = (configuration.preload + keepalive.sorted()).map(\.cacheKey).filter { !$0.isEmpty && seen.insert($0).inserted }
        let now = clock.now
        return state.withLockedValue { state in
            names.filter { key in
                if case .fresh = state.cache.peek(key, now: now) { return false }
                guard state.inflight[key] == nil else { return false }
                state.inflight[key] = []
                return true
            }
        }
    }

    /// One chunk at a time, so a long preload list does not open hundreds of requests at once.
    private func preload(_ keys: [String]) async {
        logger.debug("preloading", metadata: ["resolver.names": "\(keys.count)"])
        for start in stride(from: 0, to: keys.count, by: configuration.batchSize) {
            let chunk = Array(keys[start..<min(start + configuration.batchSize, keys.count)])
            if Task.isCancelled {
                // The names stay in flight; `stop()` fails anyone waiting for them.
                return
            }
            await execute(chunk)
        }
    }

    // MARK: Prefetch

    /// Refreshes keepalive and hot names at `prefetchFraction` of their TTL, sleeping until the
    /// next such point or until woken because that point may have moved closer.
    private func prefetchLoop() async {
        let hotThreshold = configuration.hotThreshold
        while !Task.isCancelled {
            let now = clock.now
            let (due, deadline) = state.withLockedValue { state -> ([String], C.Instant?) in
                let due = state.cache.namesDueForPrefetch(now: now, keepalive: keepalive, hotThreshold: hotThreshold)
                    .filter { key in
                        // Already being queried: that query's answer resets the refresh state.
                        guard state.inflight[key] == nil else { return false }
                        state.inflight[key] = []
                        return true
                    }
                return (due, state.cache.nextPrefetchDeadline(now: now, keepalive: keepalive, hotThreshold: hotThreshold))
            }
            if !due.isEmpty {
                logger.debug("prefetching", metadata: ["resolver.names": "\(due.count)"])
            }
            for start in stride(from: 0, to: due.count, by: configuration.batchSize) {
                jobSink.yield(Array(due[start..<min(start + configuration.batchSize, due.count)]))
            }
            await waitForPrefetchWork(until: deadline)
        }
    }

    private func waitForPrefetchWork(until deadline: C.Instant?) async {
        await withTaskGroup(of: Void.self) { group in
            if let deadline {
                group.addTask { try? await self.clock.sleep(until: deadline, tolerance: nil) }
            }
            group.addTask { await self.prefetchWake.wait() }
            await group.next()
            group.cancelAll()
        }
    }
}
