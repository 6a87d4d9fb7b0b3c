import NIOHTTP1
import Synchronization

/// Request ids: each client connection gets a 64-bit id (a random half drawn once per process and
/// a counter), each request on it its number, so an id costs no system call and no allocation
/// until it is written, and ids from two runs of the proxy do not collide.
enum RequestID {
    private static let prefix: UInt64 = UInt64.random(in: 1...UInt64(UInt32.max)) << 32
    private static let counter = Atomic<UInt32>(0)

    /// A new connection's id (never 0).
    static func nextConnection() -> UInt64 {
        prefix | UInt64(counter.wrappingAdd(1, ordering: .relaxed).newValue)
    }

    /// The client's own id in `field`, when it is one we pass on: 1 to 128 characters of letters,
    /// digits and `-._:+/=` (UUIDs, W3C trace ids, base64). Anything else is replaced.
    static func clientValue(_ headers: HTTPHeaders, field: String) -> String? {
        let values = headers[field]
        guard values.count == 1, let value = values.first, (1...128).contains(value.utf8.count) else { return nil }
        let allowed = value.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                return true
            default:
                return "-._:+/=".utf8.contains(byte)
            }
        }
        return allowed ? value : nil
    }
}
