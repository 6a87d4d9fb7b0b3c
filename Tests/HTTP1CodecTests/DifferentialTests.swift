import Foundation
import HTTP1Codec
import HTTP1CodecOracle
import Testing

/// The codec against the llhttp stack (NIOHTTP1's decoders inside ClientRequestDecoder, the request
/// side the codec replaced, and the upstream decoder it replaced, plus MessageFraming's rules and
/// the machine's 414 and 101 checks), on
/// seeded generated and mutated messages cut into random reads, on the framing suite's cases (the
/// fuzz corpus seeds), and on what the fuzzer found. Both must give the same verdict and error
/// kind, the same messages, body bytes and trailers.
///
/// Disagreements kept by design, each with the clause that makes the codec right (the numbers
/// are `Differential.disagreement`'s rules):
///  1. Extension methods (`FOO`, `get`): llhttp refuses methods outside its list, at their first
///     byte; the codec takes any token. RFC 9110 §9.1: method = token, case-sensitive, extensible.
///  2. CONNECT with a Transfer-Encoding that cannot frame a body, or on HTTP/1.0: today a tunnel
///     (llhttp and the machine skip framing for CONNECT), the codec 400/501. RFC 9112 §6.3 rule 4
///     and §6.1 apply to every request.
///  3. A non-2xx answer to CONNECT: NIO drops its body, the codec reads the body its fields
///     frame; a 2xx is a tunnel whatever its framing fields say. RFC 9112 §6.3 rule 2, RFC 9110
///     §9.3.6 ("A client MUST ignore any Content-Length or Transfer-Encoding header fields received
///     in a successful response to CONNECT").
///  4. Size limits at their edges: the codec counts head bytes as sent, each section on its own,
///     and answers 414 as soon as the target passes 8192 bytes. RFC 9112 §3 and RFC 6585 §5 leave
///     the limits to the recipient.
///  5. Targets llhttp's URL grammar refuses though they are URI characters (`a.test:443` outside
///     CONNECT is a valid absolute-URI, RFC 3986 §4.3): the form is RequestTarget's to judge after
///     the codec (RFC 9112 §3.2), which answers 400 or 501 for what it cannot route.
///  6. BWS around a chunk extension's `;` and `=`: accepted. RFC 9112 §7.1.1 (chunk-ext grammar)
///     and RFC 9110 §5.6.3 (a recipient MUST parse BWS).
///  7. The codec refuses a message before its end where llhttp waits for more bytes (a version
///     or status line already wrong): the same verdict, earlier.
///  8. A tab in the OWS around a Content-Length value: accepted. RFC 9110 §5.6.3 (OWS includes HTAB).
///  9. A Content-Length of more than 18 digits on a response without body: refused, as on every
///     message (MessageFraming's rule). RFC 9110 §8.6 (guard against overflow).
/// 10. A control byte or DEL in a reason phrase: refused. RFC 9112 §4 (reason-phrase is HTAB, SP,
///     VCHAR, obs-text).
/// 11. More than one space between start-line parts: refused. RFC 9112 §3 and §4 (single SP;
///     parsing on whitespace is a MAY).
/// 12. Spaces after a Content-Length value: accepted (today NIO keeps them and MessageFraming
///     refuses "5 "). RFC 9110 §5.5 (a field value has no leading or trailing whitespace).
/// 13. `close` and `keep-alive` together on HTTP/1.0: the connection closes (llhttp keeps it).
///     RFC 9112 §9.3 (close is checked first).
/// 14. A bare CR or LF in or before a head: refused (llhttp takes some, in responses above all).
///     RFC 9112 §2.2 (a bare CR is invalid; a lone LF as a line end is only a MAY).
/// 15. CR/LF after the final response: refused as bytes after the response (the connection is
///     closed, not pooled; the response was complete). RFC 9112 §2.2 lets only a server skip empty
///     lines, before a request-line.
/// 16. Chunk extensions outside the grammar (empty name, bare `=`, open quoted string): refused.
///     RFC 9112 §7.1.1.
/// 17. A status code outside 100...599: refused (502). RFC 9110 §15 ("Values outside the range
///     100..599 are invalid").
/// 18. llhttp refuses a Content-Length value at its first wrong byte, the codec once the line
///     ends: the same verdict, checked by ending the input's line and head.
/// 19. After an HTTP/1.0 1xx llhttp takes the connection as closed and refuses the final
///     response; the codec reads it. RFC 9110 §15.2 (a 1xx is interim: the final response
///     follows), RFC 9112 §9.3 (persistence is the final response's).
/// 20. A Transfer-Encoding field that is empty or ends in an empty element (`chunked,`): refused.
///     llhttp does not take chunked as final there (a request is refused today too; a response is
///     read until the close while MessageFraming takes it for chunked, and its chunk framing is
///     relayed as content). RFC 9110 §5.6.1 would skip the empty element, RFC 9112 §6.3 would
///     read such a response until the close: parsers disagreeing on framing is the smuggling
///     vector, so the codec refuses (found by the fuzzer).
/// 21. Transfer-Encoding in a response's trailer section: refused (llhttp refuses it only in a
///     request's). RFC 9110 §6.5.1 (framing fields cannot be trailers), RFC 9112 §7.1.2.
@Suite struct DifferentialTests {
    static let seeds: UInt64 = 3000

    @Test func generatedRequests() {
        var rng = SplitMix64(seed: 0x35_0001)
        var failures = 0
        for _ in 0..<Self.seeds {
            var bytes = MessageGenerator.requests(&rng)
            if rng.next() % 3 != 0 { bytes = MessageGenerator.mutate(bytes, &rng) }
            let input = DifferentialInput(bytes: bytes, splits: MessageGenerator.splits(bytes.count, &rng))
            if let report = Differential.check(input, role: .request) {
                failures += 1
                if failures <= 3 { Issue.record(Comment(rawValue: report)) }
            }
        }
        #expect(failures == 0)
    }

    @Test func generatedResponses() {
        var rng = SplitMix64(seed: 0x35_0002)
        var failures = 0
        for _ in 0..<Self.seeds {
            var input = MessageGenerator.response(&rng)
            if rng.next() % 3 != 0 { input.bytes = MessageGenerator.mutate(input.bytes, &rng) }
            input = DifferentialInput(
                bytes: input.bytes, splits: MessageGenerator.splits(input.bytes.count, &rng), method: input.method,
                upgradeRequested: input.upgradeRequested
            )
            if let report = Differential.check(input, role: .response) {
                failures += 1
                if failures <= 3 { Issue.record(Comment(rawValue: report)) }
            }
        }
        #expect(failures == 0)
    }

    /// Fuzz/corpus/codec-request and codec-response: the framing suite's cases (exported by
    /// scripts/export-codec-corpus.sh) and what the fuzzer kept, each cut at a few points.
    @Test(arguments: [("codec-request", Role.request), ("codec-response", .response)])
    func corpus(_ name: String, _ role: Role) throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Fuzz/corpus/\(name)")
        let files = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
        #expect(files.count >= 10, "the corpus is committed")
        var rng = SplitMix64(seed: 0x35_0003)
        for file in files.sorted(by: { $0.path < $1.path }) {
            let data = Array(try Data(contentsOf: file))
            var input = DifferentialInput(fuzz: data)
            for splits in [[], MessageGenerator.splits(input.bytes.count, &rng)] {
                input.splits = splits.filter { $0 > 0 && $0 < input.bytes.count }.sorted()
                if let report = Differential.check(input, role: role) {
                    Issue.record(Comment(rawValue: "\(file.lastPathComponent): \(report)"))
                }
            }
        }
    }

    /// Inputs the fuzzer or the generated runs found, kept as regressions (each a disagreement
    /// that was fixed in the codec).
    static let regressions: [(String, Role, DifferentialInput.Method)] = [
        // A 1xx left the status line's offset behind for the next head (a crash).
        ("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", .response, .GET),
        // The version was checked only at the line's end: "he" waited where llhttp refused.
        ("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100\r\nKeep-Alive: timeout=5\r\n\r\nhe", .response, .GET),
        // Empty lines before a status line (after a 1xx).
        ("HTTP/1.1 100 Continue\r\n\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", .response, .POST),
        // Proxy-Connection: keep-alive keeps an HTTP/1.0 client's connection, as today.
        ("GET http://a.test/ HTTP/1.0\r\nProxy-Connection: keep-alive\r\n\r\nGET http://a.test/2 HTTP/1.0\r\n\r\n", .request, .GET),
        // VCHARs outside RFC 3986 in a target stay accepted, as today.
        ("POST http://o/a|b{c}^ HTTP/1.0\r\nContent-Length: 0\r\n\r\n", .request, .GET),
        // A status code outside 100...599 (rule 17) and an empty chunk-extension name (rule 16).
        ("HTTP/1.1 052 Switching Protocols\r\nUpgrade: websocket\r\n\r\nraw", .response, .GET),
        ("POST http://o/x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2a;=b\r\nhel\r\n\r\n", .request, .GET),
        // The fuzzer: `chunked,` (rule 20), in a request and in a response.
        ("POST http://origin.test:8080/x HTTP/1.1\r\nHost: origin.tes\r\nTransfer-Encoding: chunked, \r\n\r\n5\r\nhello\r\n0\r\n\r\n", .request, .GET),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked,\r\nTrailer: X-Ok\r\n\r\n2\r\nok\r\n0\r\n\r\n", .response, .GET),
        // The fuzzer: a Content-Length in a trailer section.
        ("POST http://o/x HTTP/1.1\r\nHost: o\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b\r\nhello\r\n0\r\nX-Sost: o\r\nContent-Length:\u{FF}\r\n\r\n", .request, .GET),
        // The fuzzer: Transfer-Encoding in a response's trailers (rule 21).
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-A: 1\r\nTransfer-Encoding: gzip\r\n\r\n", .response, .GET),
        // NIO spells M-SEARCH without its hyphen (the oracle's transcript).
        ("M-SEARCH * HTTP/1.1\r\nContent-Length: 0\r\n\r\n", .request, .GET),
    ]

    @Test(arguments: regressions.indices)
    func regression(_ index: Int) {
        let (text, role, method) = Self.regressions[index]
        let input = DifferentialInput(bytes: Array(text.utf8), method: method)
        if let report = Differential.check(input, role: role) { Issue.record(Comment(rawValue: report)) }
    }

    /// The fuzzer: a tab in the OWS after a Content-Length value, on a 101 that answers an upgrade
    /// (rule 8). There llhttp refuses the byte itself ("invalid character in content-length
    /// header") rather than leaving the value to MessageFraming; the codec trims OWS and takes the
    /// 101 as the switch.
    @Test func aTabAfterTheContentLengthOfASwitchIsRule8() {
        for text in [
            "HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nContent-Length: 65 \t\t\r\n\r\nraw",
            "HTTP/1.1 101 Switchin\r\nConnection: u\u{FF}{ran 02\t\t,\t\tTTP/1.1 200 O Not fied\r\nContent-Length:65 \t\t\t\r\n\r\nr\0w",
        ] {
            let input = DifferentialInput(bytes: Array(text.utf8), method: .GET, upgradeRequested: true)
            let codec = CodecRunner.transcript(input, role: .response)
            let legacy = LegacyRunner.responseTranscript(input)
            #expect(codec.outcome == .stopped("tunnel"), "\(codec)")
            #expect(codec.messages.first?.status == 101)
            #expect(codec != legacy, "no longer differs: drop the rule's llhttp wording")
            let report = Differential.check(input, role: .response)
            #expect(report == nil, "\(report ?? "")")
        }
    }

    /// The by-design differences are real and stay as documented: each shows up, and is allowed.
    @Test func byDesignDifferences() {
        let cases: [(String, Role, DifferentialInput.Method)] = [
            ("FOO http://a.test/ HTTP/1.1\r\n\r\n", .request, .GET),
            ("CONNECT a.test:443 HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", .request, .GET),
            ("HTTP/1.1 407 Auth\r\nContent-Length: 4\r\n\r\nnope", .response, .CONNECT),
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", .response, .CONNECT),
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked,\r\n\r\n2\r\nok\r\n0\r\n\r\n", .response, .GET),
        ]
        for (text, role, method) in cases {
            let input = DifferentialInput(bytes: Array(text.utf8), method: method)
            let codec = CodecRunner.transcript(input, role: role)
            let legacy = role == .request ? LegacyRunner.requestTranscript(input) : LegacyRunner.responseTranscript(input)
            #expect(codec != legacy, "\(text.debugDescription) no longer differs: drop its rule")
            #expect(Differential.check(input, role: role) == nil)
        }
    }
}
