import Foundation
import Testing

/// The framing suite's cases as seed files for the codec's differential fuzzer (issue 35): each
/// request case's bytes go to Fuzz/corpus/codec-request, each response case's to
/// Fuzz/corpus/codec-response, in the fuzzer's format (a control byte: bits 0-1 the request
/// method GET, HEAD, CONNECT, POST; bit 2 "the request asked to upgrade"; then the stream).
/// Run by scripts/export-codec-corpus.sh; off otherwise, since a test run must not write into
/// the source tree.
extension FramingSuiteTests {
    static let corpusOrigin = "origin.test:8080"

    /// Responses the suite writes inline in its tests (interim responses, trailers).
    static let inlineResponses: [(name: String, method: UInt8, text: String)] = [
        ("interim-responses", 0, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"),
        ("trailers", 0, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Ok\r\n\r\n2\r\nok\r\n0\r\nX-Ok: 1\r\nSet-Cookie: a=b\r\nAuthorization: x\r\n\r\n"),
        ("early-413", 3, "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 4\r\n\r\nbig!"),
        ("second-response", 0, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ngood"),
    ]

    @Test(.enabled(if: ProcessInfo.processInfo.environment["HTTP1CODEC_EXPORT_CORPUS"] == "1"))
    func exportCodecCorpus() throws {
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Fuzz/corpus")
        func write(_ directory: String, _ name: String, control: UInt8, _ text: String) throws {
            let folder = corpus.appendingPathComponent(directory)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let bytes = [control] + Array(text.replacingOccurrences(of: "ORIGIN", with: Self.corpusOrigin).utf8)
            try Data(bytes).write(to: folder.appendingPathComponent("suite-" + Self.slug(name)))
        }
        for c in Self.cases {
            try write("codec-request", c.name, control: 0, c.request)
        }
        try write("codec-request", "pipelined", control: 0, "GET http://ORIGIN/1 HTTP/1.1\r\nHost: ORIGIN\r\n\r\nPOST http://ORIGIN/2 HTTP/1.1\r\nHost: ORIGIN\r\nContent-Length: 2\r\n\r\nhi")
        try write("codec-request", "http10 keep-alive", control: 0, "GET http://ORIGIN/a HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET http://ORIGIN/b HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        try write("codec-request", "missing final CRLF", control: 0, Self.post("Transfer-Encoding: chunked\r\n", body: "5\r\nhello\r\n0\r\n"))
        try write("codec-request", "connect", control: 0, "CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: x\r\n\r\n\u{16}\u{03}\u{01}")
        for c in Self.invalidResponses where c.response.utf8.count < 64 * 1024 {
            try write("codec-response", c.name, control: 0, c.response)
        }
        for c in Self.strayBytes {
            try write("codec-response", c.name, control: c.method == "HEAD" ? 1 : 0, c.first + c.stray)
        }
        for c in Self.inlineResponses {
            try write("codec-response", c.name, control: c.method, c.text)
        }
        // The 101 the client asked for, and a CONNECT's 200.
        try write("codec-response", "101 asked for", control: 4, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\nraw")
        try write("codec-response", "connect 200", control: 2, "HTTP/1.1 200 Connection Established\r\n\r\n\u{16}\u{03}")
    }

    static func slug(_ name: String) -> String {
        String(name.lowercased().map { $0.isLetter || $0.isNumber ? $0 : "-" })
    }
}
