/// Where a `CachingResolver.resolve(_:)` answer came from (access log, `/resolve`, statistics).
public enum AnswerSource: String, Sendable, Codable {
    /// A fresh cached answer.
    case cache
    /// An expired answer, served while it is refreshed or because the service failed.
    case stale
    /// A query to the HTTPDNS service made (or joined) for this call.
    case query
}
