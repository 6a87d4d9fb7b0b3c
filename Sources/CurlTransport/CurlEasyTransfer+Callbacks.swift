extension CurlEasyTransfer {
    /// CURLOPT_WRITEFUNCTION: returning less than offered makes libcurl stop with CURLE_WRITE_ERROR,
    /// which `exceededLimit` lets us report as `.tooLarge`.
    func receiveBody(_ chunk: UnsafeRawBufferPointer) -> Int {
        guard chunk.count <= maxResponseBytes - body.count else {
            exceededLimit = true
            return 0
        }
        body.append(contentsOf: chunk)
        return chunk.count
    }

    /// CURLOPT_HEADERFUNCTION: called once per complete header line, CRLF included, for every
    /// response on the way (1xx interim responses too), so a status line starts the list afresh.
    func receiveHeaderLine(_ line: UnsafeRawBufferPointer) -> Int {
        var text = String(decoding: line, as: UTF8.self)
        // "\r\n" is a single Character in Swift, so test for newlines rather than "\r" and "\n".
        while let last = text.last, last.isNewline {
            text.removeLast()
        }
        if text.hasPrefix("HTTP/") {
            headers.removeAll()
        } else if let colon = text.firstIndex(of: ":") {
            let name = String(text[..<colon])
            var value = text[text.index(after: colon)...].drop { $0 == " " || $0 == "\t" }
            while let last = value.last, last == " " || last == "\t" {
                value.removeLast()
            }
            headers.append((name, String(value)))
        }
        return line.count
    }
}
