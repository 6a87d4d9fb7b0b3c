/// How log lines are written.
public enum LogFormat: String, Sendable, Hashable, CaseIterable {
    /// One JSON object per line: the default, as logs usually go to a collector.
    case json
    /// Human-readable lines for a terminal.
    case text
}
