import ProxyKit

/// Configuration reloads as `/stats` shows them (`reload`), options named as `--help` spells
/// them, like the `POST /reload` answer and its log line.
package struct ReloadStatus: Sendable, Encodable, Equatable {
    /// Reloads tried (SIGHUP and `POST /reload`), and how many of them failed.
    package var reloads: Int = 0
    package var failures: Int = 0
    /// The last one: when (ISO 8601 UTC), what triggered it, "ok" or "error", and the error.
    package var lastAt: String?
    package var lastTrigger: String?
    package var lastResult: String?
    package var lastError: String?
    /// Options the last successful reload changed and applied to new requests.
    package var applied: [String] = []
    /// Options whose value now differs from the one the process started with but that only a
    /// restart applies.
    package var needsRestart: [String] = []

    package init() {}

    /// Records one reload: `applied` and `needsRestart` only change when it succeeded.
    package mutating func record(trigger: String, ok: Bool, error: String?, applied: [String], needsRestart: [String]) {
        reloads += 1
        lastAt = Timestamp.iso8601Now()
        lastTrigger = trigger
        lastResult = ok ? "ok" : "error"
        lastError = ok ? nil : error
        if ok {
            self.applied = applied
            self.needsRestart = needsRestart
        } else {
            failures += 1
        }
    }
}
