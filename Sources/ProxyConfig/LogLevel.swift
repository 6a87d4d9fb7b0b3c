/// Minimum severity that is logged. The names and order match swift-log's
/// `Logger.Level`, so the executable can map them one to one without this
/// module depending on swift-log.
public enum LogLevel: String, Sendable, Hashable, CaseIterable, Comparable {
    case trace, debug, info, notice, warning, error, critical

    /// Orders by severity: trace < debug < ... < critical.
    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}
