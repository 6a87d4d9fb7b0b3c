import HTTPDNS
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ProxyConfig
import ProxyKit
import Synchronization

/// Checks Basic proxy credentials against `--proxy-auth` users and htpasswd files.
///
/// A hash costs tens of milliseconds (bcrypt), so it is computed on a small thread pool, never on
/// an event loop, and each verdict is cached under a SHA-256 digest of the decoded user and
/// password (not of the field, which has many spellings: scheme case, spaces): a client pays the
/// hash once per credential, not per request. The cache is bounded: verified and refused
/// credentials up to `cacheCapacity` each, a full half emptied at once (a valid user can still
/// make distinct valid passwords — bcrypt ignores bytes past the 72nd — but only thrash, never
/// grow, the cache). An unknown user costs a hash too (against another user's hash), so timing
/// does not tell which user names exist. At most `maxPendingVerifications` hashes wait at once;
/// beyond, requests are answered 503 instead of queueing CPU work without bound.
package final class ProxyAuthenticator: Sendable {
    package enum Verdict: Sendable, Equatable {
        case allowed(user: String)
        /// The reason names the user, never the password.
        case denied(user: String, reason: String)
        /// Too many verifications in progress.
        case busy
    }

    private enum Secret: Sendable {
        /// From `--proxy-auth USER:PASS`: the password's SHA-256, compared in constant time.
        case plain(digest: [UInt8])
        case hash(PasswordHash)
    }

    private struct Cache {
        var allowed: [String: String] = [:]
        var denied: [String: Verdict] = [:]
    }

    static let cacheCapacity = 1024
    static let maxPendingVerifications = 128

    let realm: String
    private let users: [String: Secret]
    /// Hashed for unknown users, so they take as long as known ones (nil: no hashed users).
    private let dummyHash: PasswordHash?
    private let cache = NIOLockedValueBox(Cache())
    private let pending = Atomic<Int>(0)
    private let threadPool: NIOThreadPool
    private let failureCount = Atomic<Int>(0)
    private let successCount = Atomic<Int>(0)

    /// nil when the configuration asks for no authentication. Throws when an htpasswd file cannot
    /// be read or holds anything but supported hashes, or a user is given twice.
    package static func make(_ configuration: ProxyConfiguration, threadPool: NIOThreadPool) throws(HtpasswdFile.LoadError) -> ProxyAuthenticator? {
        guard !configuration.proxyAuth.isEmpty else { return nil }
        return ProxyAuthenticator(realm: configuration.proxyAuthRealm, users: try users(configuration), threadPool: threadPool)
    }

    /// Reads the users as `make` does, for the start-up check (`config check`, serve, reload):
    /// throws what `make` would.
    package static func check(_ configuration: ProxyConfiguration) throws(HtpasswdFile.LoadError) {
        _ = try users(configuration)
    }

    private static func users(_ configuration: ProxyConfiguration) throws(HtpasswdFile.LoadError) -> [String: Secret] {
        var users: [String: Secret] = [:]
        for source in configuration.proxyAuth {
            switch source {
            case .credential(let user, let password):
                guard users[user] == nil else {
                    throw HtpasswdFile.LoadError(path: "--proxy-auth", line: nil, reason: "user '\(ProxyError.sanitized(user))' is given twice")
                }
                users[user] = .plain(digest: Self.digest(password))
            case .htpasswdFile(let path):
                for (user, hash) in try HtpasswdFile.load(path: path).users {
                    guard users[user] == nil else {
                        throw HtpasswdFile.LoadError(path: path, line: nil, reason: "user '\(ProxyError.sanitized(user))' is also given elsewhere")
                    }
                    users[user] = .hash(hash)
                }
            }
        }
        return users
    }

    private init(realm: String, users: [String: Secret], threadPool: NIOThreadPool) {
        self.realm = realm
        self.users = users
        self.threadPool = threadPool
        self.dummyHash = users.values.lazy.compactMap { secret -> PasswordHash? in
            if case .hash(let hash) = secret { return hash }
            return nil
        }.first
    }

    /// The `Proxy-Authenticate` challenge.
    package var challenge: String { "Basic realm=\"\(realm)\", charset=\"UTF-8\"" }

    /// Failed and successful verifications so far (cache hits count too).
    package var failures: Int { failureCount.load(ordering: .relaxed) }
    package var successes: Int { successCount.load(ordering: .relaxed) }

    /// The verdict when it needs no hashing (a cached credential, an unknown user, a plain
    /// password); nil when `verify` must hash off the event loop.
    package func verdictWithoutHashing(_ credentials: ProxyCredentials) -> Verdict? {
        let key = Self.cacheKey(credentials)
        let cached: Verdict? = cache.withLockedValue { cache in
            if let user = cache.allowed[key] { return .allowed(user: user) }
            return cache.denied[key]
        }
        if let cached { return count(cached) }
        switch users[credentials.user] {
        case nil:
            if dummyHash != nil { return nil }
            return count(remember(.denied(user: credentials.user, reason: "unknown user"), key: key))
        case .plain(let digest):
            let matches = ConstantTime.equal(Self.digest(credentials.password), digest)
            return count(remember(matches ? .allowed(user: credentials.user) : .denied(user: credentials.user, reason: "wrong password"), key: key))
        case .hash:
            return nil
        }
    }

    /// Hashes on the thread pool; the verdict arrives on `eventLoop`.
    package func verify(_ credentials: ProxyCredentials, on eventLoop: any EventLoop) -> EventLoopFuture<Verdict> {
        let hash: PasswordHash
        let known: Bool
        switch users[credentials.user] {
        case .hash(let stored): (hash, known) = (stored, true)
        case nil where dummyHash != nil: (hash, known) = (dummyHash!, false)
        default: return eventLoop.makeSucceededFuture(verdictWithoutHashing(credentials) ?? .busy)
        }
        guard pending.wrappingAdd(1, ordering: .relaxed).newValue <= Self.maxPendingVerifications else {
            pending.wrappingSubtract(1, ordering: .relaxed)
            return eventLoop.makeSucceededFuture(count(.busy))
        }
        let key = Self.cacheKey(credentials)
        return threadPool.runIfActive(eventLoop: eventLoop) { () -> Verdict in
            let matches = hash.verify(credentials.password)
            guard known else { return .denied(user: credentials.user, reason: "unknown user") }
            return matches ? .allowed(user: credentials.user) : .denied(user: credentials.user, reason: "wrong password")
        }.always { _ in
            self.pending.wrappingSubtract(1, ordering: .relaxed)
        }.map { verdict in
            self.count(self.remember(verdict, key: key))
        }.recover { _ in
            .busy
        }
    }

    private func remember(_ verdict: Verdict, key: String) -> Verdict {
        cache.withLockedValue { cache in
            switch verdict {
            case .allowed(let user):
                if cache.allowed.count >= Self.cacheCapacity { cache.allowed.removeAll(keepingCapacity: true) }
                cache.allowed[key] = user
            case .denied:
                if cache.denied.count >= Self.cacheCapacity { cache.denied.removeAll(keepingCapacity: true) }
                cache.denied[key] = verdict
            case .busy:
                break
            }
        }
        return verdict
    }

    private func count(_ verdict: Verdict) -> Verdict {
        switch verdict {
        case .allowed: successCount.wrappingAdd(1, ordering: .relaxed)
        case .denied, .busy: failureCount.wrappingAdd(1, ordering: .relaxed)
        }
        return verdict
    }

    /// The decoded user and password (NUL-separated; neither contains one), digested.
    private static func cacheKey(_ credentials: ProxyCredentials) -> String {
        let text = credentials.user + "\u{0}" + credentials.password
        return Digest.sha256Hex(text) ?? text
    }

    private static func digest(_ text: String) -> [UInt8] {
        Array((Digest.sha256Hex(text) ?? text).utf8)
    }
}
