import COpenSSL

extension Digest {
    /// Lowercase hex HMAC-SHA256 of `message` under `key`, or nil if OpenSSL fails (it should not).
    public static func hmacSHA256Hex(key: [UInt8], message: String) -> String? {
        let input = Array(message.utf8)
        var digest = [UInt8](repeating: 0, count: 64)
        var length: UInt32 = 0
        // Empty arrays may have no storage; OpenSSL still wants valid pointers.
        let keyBytes = key.isEmpty ? [0] : key
        let data = input.isEmpty ? [0] : input
        let result = keyBytes.withUnsafeBytes { keyPointer in
            data.withUnsafeBytes { dataPointer in
                digest.withUnsafeMutableBufferPointer { out in
                    HMAC(EVP_sha256(), keyPointer.baseAddress, Int32(key.count), dataPointer.baseAddress?.assumingMemoryBound(to: UInt8.self),
                         input.count, out.baseAddress, &length)
                }
            }
        }
        guard result != nil, length > 0, Int(length) <= digest.count else { return nil }
        return hexString(digest[0..<Int(length)])
    }

    /// The bytes of an even-length hex string (either case), nil for anything else.
    public static func bytes(fromHex text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    public static func hex(_ bytes: [UInt8]) -> String {
        hexString(bytes)
    }
}
