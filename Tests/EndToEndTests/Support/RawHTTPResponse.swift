import Foundation

/// A response head read off a `RawClient`: the status line and headers, in wire order.
struct RawResponseHead: Sendable, CustomStringConvertible {
    /// e.g. "HTTP/1.1 200 OK"
    var statusLine: String
    var headers: [(name: String, value: String)]
    /// Bytes already received after the CRLFCRLF. They stay buffered in the client: the next
    /// `read`/`readBody` call returns them first (do not prepend them yourself).
    var leftover: [UInt8]

    /// "HTTP/1.1"
    var version: String { String(statusLine.split(separator: " ", maxSplits: 1).first ?? "") }

    /// The status code, or -1 if the status line is malformed.
    var statusCode: Int {
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, let code = Int(parts[1]) else { return -1 }
        return code
    }

    /// All values of a header (case-insensitive name), in order.
    func values(_ name: String) -> [String] {
        headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }

    /// The values of a header joined with ", ", or nil when absent.
    func header(_ name: String) -> String? {
        let all = values(name)
        return all.isEmpty ? nil : all.joined(separator: ", ")
    }

    /// Comma-separated tokens of a header, lowercased (for Connection / Transfer-Encoding).
    func tokens(_ name: String) -> [String] {
        values(name).flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
    }

    var description: String {
        ([statusLine] + headers.map { "\($0.name): \($0.value)" }).joined(separator: "\n")
    }

    /// Parses "STATUS-LINE\r\nName: value\r\n...\r\n" (without the final empty line).
    static func parse(_ text: String, leftover: [UInt8]) throws -> RawResponseHead {
        var lines = text.components(separatedBy: "\r\n")
        guard !lines.isEmpty, lines[0].hasPrefix("HTTP/") else {
            throw RawClient.Failure.malformed("not an HTTP response head: \(text.prefix(200).debugDescription)")
        }
        let statusLine = lines.removeFirst()
        var headers: [(name: String, value: String)] = []
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else {
                throw RawClient.Failure.malformed("header line without colon: \(line.debugDescription)")
            }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        return RawResponseHead(statusLine: statusLine, headers: headers, leftover: leftover)
    }
}

/// A complete HTTP/1.1 response (head and de-framed body) read off a `RawClient`.
struct RawHTTPResponse: Sendable {
    var head: RawResponseHead
    var body: [UInt8]

    var statusCode: Int { head.statusCode }
    var bodyText: String { String(decoding: body, as: UTF8.self) }
    func header(_ name: String) -> String? { head.header(name) }
}

