extension String {
    /// The cache key of a host name: lowercased, without the trailing root dot, so `Example.COM.`
    /// and `example.com` share one entry.
    ///
    /// Already-normal ASCII names (nearly every name the proxy sees) are returned as they are,
    /// without allocating: this runs on every request.
    var cacheKey: String {
        let alreadyNormal = utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            if bytes.last == UInt8(ascii: ".") { return false }
            for byte in bytes where byte >= 0x80 || byte &- UInt8(ascii: "A") < 26 {
                return false
            }
            return true
        }
        if alreadyNormal == true {
            return self
        }
        var key = lowercased()
        while key.utf8.last == UInt8(ascii: ".") {
            key.removeLast()
        }
        return key
    }
}
