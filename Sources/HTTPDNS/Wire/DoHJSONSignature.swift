/// Credentials for Alibaba Public DNS's signed JSON API (`&uid=U&ak=AK&ts=TS&key=K`).
/// Holds a secret: keep it out of logs and `description`s.
public struct DoHJSONSignature: Sendable {
    /// The vendor's C SDK sends seconds; one documentation revision says milliseconds.
    public enum TimestampUnit: Sendable, Equatable {
        case seconds
        case milliseconds
    }

    public var uid: String
    public var accessKeyID: String
    public var accessKeySecret: String
    public var timestampUnit: TimestampUnit

    public init(uid: String, accessKeyID: String, accessKeySecret: String, timestampUnit: TimestampUnit = .seconds) {
        self.uid = uid
        self.accessKeyID = accessKeyID
        self.accessKeySecret = accessKeySecret
        self.timestampUnit = timestampUnit
    }

    /// `ts` for a request made at `unixTimeMillis` (milliseconds since 1970, the caller's
    /// clock), in this signature's unit, seconds truncated. Negative times give 0.
    public func timestamp(unixTimeMillis: Int) -> Int64 {
        let millis = Int64(max(unixTimeMillis, 0))
        return timestampUnit == .milliseconds ? millis : millis / 1000
    }
}
