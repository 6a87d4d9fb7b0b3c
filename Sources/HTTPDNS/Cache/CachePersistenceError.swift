/// Why the cache file could not be read or written. `shortDescription` is a bounded label.
public struct CachePersistenceError: Error, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        /// open/read/write/fsync/rename failed.
        case io
        /// Not a cache file we understand (truncated, edited, another program's file).
        case corrupt
        /// Written by an incompatible version.
        case unsupportedVersion = "unsupported_version"
    }

    public var kind: Kind
    public var message: String

    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var shortDescription: String { kind.rawValue }
    public var description: String { "\(kind.rawValue): \(message)" }
}
