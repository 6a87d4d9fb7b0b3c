extension TencentHTTPDNS {
    /// Longest clear answer accepted (a batch of five names with many addresses is a few KiB).
    public static let maximumAnswerBytes = 64 * 1024
    /// Most lines in one answer.
    public static let maximumLines = 64

    /// One line of an answer: `[host.:]v4;v4[,ttl][-v6;v6[,ttl]][|clientip]`.
    public struct Line: Sendable, Equatable {
        /// The name the line is for (lowercase, no trailing dot); nil when the line has no prefix.
        public var host: String?
        public var answer: WireAnswer
    }

    /// The clear text of an answer, line by line. Empty lines are skipped; an empty answer has
    /// no lines. Lenient about what the service may add (a host prefix on a single answer, a
    /// missing ttl, `0` for no address, an invalid address among valid ones), strict about
    /// what is not an answer at all (every entry invalid, a non-numeric ttl, too many lines or bytes).
    public static func parse(_ body: [UInt8]) throws(WireError) -> [Line] {
        guard body.count <= maximumAnswerBytes else { throw .malformedMessage("answer longer than \(maximumAnswerBytes) bytes") }
        guard !body.contains(0) else { throw .malformedMessage("NUL byte in the answer") }
        let text = String(decoding: body, as: UTF8.self)
        var lines: [Line] = []
        for raw in text.split(whereSeparator: \.isNewline) {  // "\r\n" is one Character
            let trimmed = raw.trimmingSpaces
            guard !trimmed.isEmpty else { continue }
            guard lines.count < maximumLines else { throw .malformedMessage("more than \(maximumLines) lines") }
            lines.append(try parseLine(trimmed))
        }
        // The service appends `|clientip` to the last line of a batch only: it applies to all.
        if let clientIP = lines.last?.answer.clientIP {
            for index in lines.indices where lines[index].answer.clientIP == nil { lines[index].answer.clientIP = clientIP }
        }
        return lines
    }

    /// A single-name answer: the first line (whatever its host prefix says), or noData when empty.
    public static func parseSingle(_ body: [UInt8]) throws(WireError) -> WireAnswer {
        try parse(body).first?.answer ?? WireAnswer(outcome: .noData)
    }

    /// A batch answer by host. A line without a host prefix counts only when one host was asked.
    public static func parseBatch(_ body: [UInt8], hosts: [String]) throws(WireError) -> [String: WireAnswer] {
        var answers: [String: WireAnswer] = [:]
        for line in try parse(body) {
            if let host = line.host {
                if answers[host] == nil { answers[host] = line.answer }
            } else if hosts.count == 1 {
                let host = DNSName.normalized(hosts[0])
                if answers[host] == nil { answers[host] = line.answer }
            }
        }
        return answers
    }

    static func parseLine(_ line: Substring) throws(WireError) -> Line {
        var data = line
        var clientIP: String?
        if let bar = data.lastIndex(of: "|") {
            clientIP = IPText.canonical(String(data[data.index(after: bar)...].trimmingSpaces))?.text
            data = data[..<bar]
        }
        var host: String?
        if let colon = data.firstIndex(of: ":"), Self.looksLikeHost(data[..<colon]) {
            // `a.com.:1.2.3.4`: no address has a "." before its first ":" (nor a letter and a ".").
            host = DNSName.normalized(String(data[..<colon]))
            data = data[data.index(after: colon)...]
        } else if Self.looksLikeHost(data) {
            // `a.com|1.2.3.4`: a name alone means no record (IPv4 text has no letters, IPv6 has ":").
            return Line(host: DNSName.normalized(String(data)), answer: WireAnswer(outcome: .noData, clientIP: clientIP))
        }
        let sections = data.split(separator: "-", omittingEmptySubsequences: false)
        guard sections.count <= 2 else { throw .malformedMessage("more than two address sections in a line") }
        var collector = IPText.Collector()
        var ttl: Int?
        var invalid = 0
        for section in sections {
            let parts = section.split(separator: ",", omittingEmptySubsequences: false)
            guard parts.count <= 2 else { throw .malformedMessage("more than one ',' in an address section") }
            for entry in parts[0].split(separator: ";") {
                let token = entry.trimmingSpaces
                if token.isEmpty || token == "0" { continue }
                if !collector.add(String(token)) { invalid += 1 }
            }
            if parts.count == 2 {
                let text = parts[1].trimmingSpaces
                guard text.isEmpty || (text.count <= 9 && text.allSatisfy({ $0.isASCII && $0.isNumber })) else {
                    throw .malformedMessage("ttl is not a number")
                }
                // A ttl <= 0 means none (the SDK default then applies); the family with the shorter ttl wins.
                if let value = Int(text), value > 0 { ttl = min(ttl ?? value, value) }
            }
        }
        if invalid > 0, collector.isEmpty { throw .malformedMessage("no valid address in the answer") }
        let answer = WireAnswer(
            outcome: collector.isEmpty ? .noData : .addresses,
            ipv4: collector.ipv4, ipv6: collector.ipv6, ttl: ttl, clientIP: clientIP
        )
        return Line(host: host, answer: answer)
    }

    /// Host-name characters only, with a "." and a letter: never an address list (IPv4 text has
    /// no letters; IPv6 text has ":").
    static func looksLikeHost(_ text: Substring) -> Bool {
        text.contains(".") && text.contains(where: { $0.isLetter })
            && text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_") })
    }
}

extension Substring {
    /// Without ASCII spaces, tabs and carriage returns at either end.
    fileprivate var trimmingSpaces: Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" || first == "\r" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" || last == "\r" { text.removeLast() }
        return text
    }
}
