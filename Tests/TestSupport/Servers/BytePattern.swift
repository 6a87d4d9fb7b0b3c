import Foundation

/// The deterministic body pattern served by `TestOrigin`: byte i is `UInt8(i % 251)`.
package enum BytePattern {
    package static let period = 251

    /// One 64 KiB piece plus a full period, so that any piece can be sliced out of it without computation.
    package static let table: [UInt8] = (0..<(65_536 + period)).map { UInt8($0 % period) }

    package static func byte(at index: Int) -> UInt8 { UInt8(index % period) }

    /// `count` pattern bytes starting at absolute offset `offset`.
    package static func bytes(count: Int, offset: Int = 0) -> [UInt8] {
        var result = [UInt8]()
        result.reserveCapacity(count)
        var produced = 0
        while produced < count {
            let n = min(65_536, count - produced)
            let start = (offset + produced) % period
            result.append(contentsOf: table[start..<(start + n)])
            produced += n
        }
        return result
    }

    /// FNV-1a 64 (hex) of the first `count` pattern bytes.
    package static func fnvHex(count: Int) -> String {
        var hasher = FNV1a64()
        var produced = 0
        table.withUnsafeBytes { raw in
            while produced < count {
                let n = min(65_536, count - produced)
                let start = produced % period
                hasher.update(UnsafeRawBufferPointer(rebasing: raw[start..<(start + n)]))
                produced += n
            }
        }
        return hasher.hex
    }

    /// Index of the first byte of `data` that differs from the pattern (starting at absolute `offset`), or nil.
    /// Compares with memcmp, so it is fast even for 50 MiB in a debug build.
    package static func firstMismatch(in data: UnsafeRawBufferPointer, offset: Int = 0) -> Int? {
        var checked = 0
        return table.withUnsafeBytes { raw -> Int? in
            while checked < data.count {
                let n = min(65_536, data.count - checked)
                let start = (offset + checked) % period
                if memcmp(data.baseAddress! + checked, raw.baseAddress! + start, n) != 0 {
                    for i in 0..<n where data[checked + i] != raw[start + i] {
                        return checked + i
                    }
                }
                checked += n
            }
            return nil
        }
    }

    package static func firstMismatch(in data: Data, offset: Int = 0) -> Int? {
        data.withUnsafeBytes { firstMismatch(in: $0, offset: offset) }
    }

    package static func firstMismatch(in bytes: [UInt8], offset: Int = 0) -> Int? {
        bytes.withUnsafeBytes { firstMismatch(in: $0, offset: offset) }
    }

    /// True when `data` is exactly the first `count` pattern bytes.
    package static func matches(_ data: Data, count: Int) -> Bool {
        data.count == count && firstMismatch(in: data) == nil
    }

    package static func matches(_ bytes: [UInt8], count: Int) -> Bool {
        bytes.count == count && firstMismatch(in: bytes) == nil
    }
}
