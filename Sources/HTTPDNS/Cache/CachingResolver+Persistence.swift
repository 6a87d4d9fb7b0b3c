#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging

/// Warm restarts: the cache is written to `configuration.cacheFile` with wall-clock expiries and
/// read back at start. A missing or unreadable file only costs a cold start, never a crash.
extension CachingResolver {
    func load(from path: String) {
        let bytes: [UInt8]?
        let file: CacheFile
        do {
            bytes = try CacheFileIO.contents(of: path)
            guard let bytes else {
                logger.debug("no DNS cache file yet", metadata: ["cache.file": "\(path)"])
                return
            }
            file = try CacheFile.decode(bytes)
        } catch {
            logger.warning("ignoring unreadable DNS cache file", metadata: [
                "cache.file": "\(path)", "error.kind": "\(error.shortDescription)", "error": "\(error.message)",
            ])
            return
        }
        let now = clock.now
        let wallNow = wallClock().timeIntervalSince1970
        let cacheConfiguration = configuration.cache
        let (restored, dropped) = state.withLockedValue { state -> (Int, Int) in
            var restored = 0
            var dropped = 0
            for record in file.entries {
                // Re-clamp: the configuration may have changed since the file was written.
                let ttl = cacheConfiguration.clamp(.seconds(record.ttl))
                let remaining = min(Duration.seconds(record.expires - wallNow), ttl)
                if !cacheConfiguration.immutable && remaining <= .zero - cacheConfiguration.maxStale {
                    dropped += 1
                    continue
                }
                state.cache.restore(record.name, answer: record.answer, ttl: ttl, expiresAt: now.advanced(by: remaining))
                restored += 1
            }
            return (restored, dropped)
        }
        logger.info("loaded DNS cache file", metadata: [
            "cache.file": "\(path)", "cache.restored": "\(restored)", "cache.dropped": "\(dropped)",
        ])
    }

    func save(to path: String) {
        let now = clock.now
        let wallNow = wallClock().timeIntervalSince1970
        let entries = state.withLockedValue { $0.cache.persistableEntries(now: now) }
        let file = CacheFile(saved: wallNow, entries: entries.map { entry in
            CacheFile.Record(
                name: entry.name, answer: entry.answer, ttl: entry.ttl.cacheSeconds,
                expires: wallNow + entry.remaining.cacheSeconds
            )
        })
        do {
            try CacheFileIO.replace(path, with: file.encoded())
            logger.debug("saved DNS cache file", metadata: ["cache.file": "\(path)", "cache.entries": "\(entries.count)"])
        } catch {
            logger.warning("cannot save DNS cache file", metadata: [
                "cache.file": "\(path)", "error.kind": "\(error.shortDescription)", "error": "\(error.message)",
            ])
        }
    }

    func persistPeriodically(to path: String) async {
        while true {
            do {
                try await clock.sleep(until: clock.now.advanced(by: configuration.persistInterval), tolerance: nil)
            } catch {
                // Cancelled: `stop()` writes the final copy.
                return
            }
            save(to: path)
        }
    }
}
