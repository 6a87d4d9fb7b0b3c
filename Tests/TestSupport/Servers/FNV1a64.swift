/// Incremental 64-bit FNV-1a hash, used by `TestOrigin` (/digest) and by tests to compare bodies.
package struct FNV1a64: Sendable, Equatable {
    package static let offsetBasis: UInt64 = 0xcbf2_9ce4_8422_2325
    package static let prime: UInt64 = 0x0000_0100_0000_01b3

    private(set) var value: UInt64 = FNV1a64.offsetBasis
    private(set) var count: Int = 0

    package init() {}

    package mutating func update(_ buffer: UnsafeRawBufferPointer) {
        var hash = value
        for byte in buffer {
            hash = (hash ^ UInt64(byte)) &* FNV1a64.prime
        }
        value = hash
        count += buffer.count
    }

    package mutating func update(_ bytes: some Sequence<UInt8>) {
        var hash = value
        var n = 0
        for byte in bytes {
            hash = (hash ^ UInt64(byte)) &* FNV1a64.prime
            n += 1
        }
        value = hash
        count += n
    }

    /// 16 lowercase hex digits, zero padded (the format TestOrigin puts in its /digest JSON).
    package var hex: String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    package static func hex<Bytes: Sequence<UInt8>>(of bytes: Bytes) -> String {
        var hasher = FNV1a64()
        hasher.update(bytes)
        return hasher.hex
    }
}
