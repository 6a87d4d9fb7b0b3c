/// The Host header of an HTTP/1.x request head at the start of a connection, once the head is
/// complete (CRLF CRLF, or bare LF LF). Only the first request is read here: the connection then
/// goes to the HTTP pipeline, which serves every request by its own Host.
enum HTTPHeadPeek {
    static func host(_ bytes: [UInt8]) -> TransparentPeek {
        // A head longer than the limit is too large whether or not its end has arrived, so the
        // outcome does not depend on how the bytes were split into reads.
        guard let end = headEnd(bytes) else {
            return bytes.count >= TransparentPeek.limit ? .tooLarge : .needMore
        }
        guard end <= TransparentPeek.limit else { return .tooLarge }
        let lines = bytes[..<end].split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        guard let requestLine = lines.first, requestLine.contains(UInt8(ascii: " ")),
              String(decoding: requestLine, as: UTF8.self).contains(" HTTP/1.")
        else { return .unknown }
        var host: String?
        var hosts = 0
        for line in lines.dropFirst() {
            var line = line
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
            let name = line[line.startIndex..<colon]
            guard name.count == 4, String(decoding: name, as: UTF8.self).lowercased() == "host" else { continue }
            hosts += 1
            host = authorityHost(trimmed(line[(colon + 1)...]))
        }
        return .http(host: hosts == 1 ? host : nil)
    }

    /// The index just past the blank line ending the head, or nil while it is incomplete.
    static func headEnd(_ bytes: [UInt8]) -> Int? {
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "\n") {
                let next = index + 1
                if next < bytes.count, bytes[next] == UInt8(ascii: "\n") { return next + 1 }
                if next + 1 < bytes.count, bytes[next] == UInt8(ascii: "\r"), bytes[next + 1] == UInt8(ascii: "\n") { return next + 2 }
            }
            index += 1
        }
        return nil
    }

    static func trimmed(_ value: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var value = value
        while let first = value.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") { value = value.dropFirst() }
        while let last = value.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") { value = value.dropLast() }
        return value
    }

    /// The host part of a Host value `name[:port]` when it is a DNS name (IP literals: nil).
    static func authorityHost(_ value: ArraySlice<UInt8>) -> String? {
        var host = value
        if let colon = value.lastIndex(of: UInt8(ascii: ":")) {
            let port = value[(colon + 1)...]
            guard !port.isEmpty, port.count <= 5, port.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
            host = value[..<colon]
        }
        return TransparentPeek.hostName(host)
    }
}
