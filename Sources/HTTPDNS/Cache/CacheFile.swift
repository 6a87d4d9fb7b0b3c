#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The on-disk form of the cache. Monotonic instants do not survive a restart, so each entry
/// carries its expiry as wall-clock seconds since the Unix epoch.
struct CacheFile: Codable, Equatable {
    static let currentVersion = 1

    struct Record: Codable, Equatable {
        var name: String
        var answer: ResolvedAnswer
        /// The TTL the entry was cached for, after clamping, in seconds.
        var ttl: Double
        /// Wall-clock expiry, seconds since the Unix epoch.
        var expires: Double
    }

    var version: Int
    /// Wall-clock time of writing, seconds since the Unix epoch (for people reading the file).
    var saved: Double
    /// Least recently used first, so loading them in order restores the LRU order.
    var entries: [Record]

    init(saved: Double, entries: [Record]) {
        self.version = Self.currentVersion
        self.saved = saved
        self.entries = entries
    }

    func encoded() throws(CachePersistenceError) -> [UInt8] {
        do {
            return Array(try JSONEncoder().encode(self))
        } catch {
            throw CachePersistenceError(.corrupt, "cannot encode the cache: \(error)")
        }
    }

    static func decode(_ bytes: [UInt8]) throws(CachePersistenceError) -> CacheFile {
        let file: CacheFile
        do {
            file = try JSONDecoder().decode(CacheFile.self, from: Data(bytes))
        } catch {
            throw CachePersistenceError(.corrupt, "not a cache file: \(error)")
        }
        guard file.version == currentVersion else {
            throw CachePersistenceError(.unsupportedVersion, "cache file version \(file.version), expected \(currentVersion)")
        }
        return file
    }
}
