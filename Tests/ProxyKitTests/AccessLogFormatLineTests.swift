import Testing

@testable import ProxyKit
@testable import ProxyHTTP

/// The combined and squid lines byte by byte: client bytes can neither split a line nor break a
/// field's quotes, and what carries tokens (the query) stays out.
@Suite struct AccessLogFormatLineTests {
    private static func record(target: String) -> AccessLogRecord {
        var r = AccessLogRecord(kind: .request, client: "127.0.0.1:5000", method: "GET")
        r.requestTarget = target
        r.status = 400
        r.bytesDown = 12
        return r
    }

    private static func combined(_ r: AccessLogRecord) -> String {
        var line = JSONLine(bytes: [])
        r.appendCombined(to: &line, time: Array("29/Nov/2026:00:00:00 +0000".utf8))
        return String(decoding: line.bytes, as: UTF8.self)
    }

    private static func squid(_ r: AccessLogRecord) -> String {
        var line = JSONLine(bytes: [])
        r.appendSquid(to: &line, seconds: 1_795_000_000, milliseconds: 7)
        return String(decoding: line.bytes, as: UTF8.self)
    }

    @Test func theRequestLineIsTheOneReceivedWithoutItsQuery() {
        #expect(Self.combined(Self.record(target: "/p?token=secret")).contains(#""GET /p HTTP/1.1" 400 12 "#))
        #expect(Self.combined(Self.record(target: "http://a.test:81/x#access_token=secret")).contains(#""GET http://a.test:81/x HTTP/1.1""#))
        #expect(Self.squid(Self.record(target: "/p?token=secret")).contains(" GET /p - HIER_NONE/-"))
        #expect(Self.combined(Self.record(target: "?only=query")).contains(#""GET - HTTP/1.1""#))
    }

    @Test func craftedTargetBytesCannotSplitTheLineOrItsFields() {
        let crafted = "/a\" 200 1 \"x\r\n127.0.0.1 - - [x] \"GET /forged\\ é\u{7f}\u{01}"
        let line = Self.combined(Self.record(target: crafted))
        #expect(!line.utf8.contains(UInt8(ascii: "\n")) && !line.utf8.contains(UInt8(ascii: "\r")))
        #expect(line.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F }, "only printable ASCII: \(line)")
        #expect(line.filter { $0 == "\"" }.count == 8, "the four quoted fields keep their quotes: \(line)")
        #expect(line.contains(#""GET /a\x22 200 1 \x22x\x0d\x0a127.0.0.1 - - [x] \x22GET /forged\x5c \xc3\xa9\x7f\x01 HTTP/1.1""#), "\(line)")

        let row = Self.squid(Self.record(target: crafted))
        #expect(row.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F }, "\(row)")
        let fields = row.split(separator: " ", omittingEmptySubsequences: true)
        #expect(fields.count == 11, "spaces in the target do not add fields: \(row)")
        #expect(fields[6] == #"/a\x22\x20200\x201\x20\x22x\x0d\x0a127.0.0.1\x20-\x20-\x20[x]\x20\x22GET\x20/forged\x5c\x20\xc3\xa9\x7f\x01"#, "\(row)")
    }

    @Test func theRequestIDIsTheLastFieldAndCannotBreakIt() {
        var r = Self.record(target: "/p")
        r.connectionID = 0x5f1c_09a2_0000_0003
        r.exchange = 12
        #expect(Self.combined(r).hasSuffix(#" "-" "-" "5f1c09a200000003-12""#), "\(Self.combined(r))")
        #expect(Self.squid(r).hasSuffix(" HIER_NONE/- - 5f1c09a200000003-12"), "\(Self.squid(r))")
        // A client's id is checked before it is kept; the formats escape it all the same.
        r.clientRequestID = "id\" 200 \n\\"
        #expect(Self.combined(r).hasSuffix(#" "id\x22 200 \x0a\x5c""#), "\(Self.combined(r))")
        #expect(Self.squid(r).hasSuffix(#" - id\x22\x20200\x20\x0a\x5c"#), "\(Self.squid(r))")
        let none = AccessLogRecord(kind: .request, client: "127.0.0.1:5000", method: "-")
        #expect(Self.combined(none).hasSuffix(#" "-" "-" "-""#) && Self.squid(none).hasSuffix(" - -"))
    }

    @Test func aCraftedRefererCannotBreakItsFieldInAnyFormat() {
        var r = Self.record(target: "/p")
        r.logsReferer = true
        r.referer = AccessLogRecord.recordedField("x\" \"y\\\r\n{\"forged\":1} é" + String(repeating: "€", count: 100))
        #expect(r.referer?.utf8.count == 254, "cut between characters to at most 256 bytes")
        let combined = Self.combined(r)
        #expect(combined.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F } && combined.filter { $0 == "\"" }.count == 8, "\(combined)")
        #expect(combined.contains(#" 12 "x\x22 \x22y\x5c\x0d\x0a{\x22forged\x22:1} \xc3\xa9\xe2\x82\xac"#), "\(combined)")
        let squid = Self.squid(r)
        #expect(squid.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F } && squid.split(separator: " ").count == 12, "\(squid)")
        #expect(squid.contains(#" - x\x22\x20\x22y\x5c\x0d\x0a{\x22forged\x22:1}\x20\xc3\xa9"#), "\(squid)")
        let json = r.jsonLine(timestamp: "t")
        #expect(!json.contains("\n") && json.contains(#","referer":"x\" \"y\\\r\n{\"forged\":1} é€"#), "\(json)")
        r.referer = nil
        #expect(r.jsonLine(timestamp: "t").contains(#","referer":null"#) && Self.squid(r).hasSuffix(" -"))
        r.logsReferer = false
        #expect(!r.jsonLine(timestamp: "t").contains("referer"))
    }

    @Test func aLongTargetIsCutAtTheLimit() {
        let long = "/" + String(repeating: "a", count: JSONLine.requestTargetLimit + 100)
        let line = Self.combined(Self.record(target: long))
        #expect(line.contains("\"GET /" + String(repeating: "a", count: JSONLine.requestTargetLimit - 1) + " HTTP/1.1\""))
    }

    @Test func withoutATargetTheRecordedURLIsWritten() {
        var r = AccessLogRecord(kind: .tunnel, client: "127.0.0.1:5000", method: "CONNECT")
        r.host = "a.test"
        r.port = 443
        #expect(Self.combined(r).contains(#""CONNECT a.test:443 HTTP/1.1""#))
        var unparsed = AccessLogRecord(kind: .request, client: "127.0.0.1:5000", method: "-")
        unparsed.status = 400
        #expect(Self.combined(unparsed).contains(#" "-" 400 "#))
    }
}
