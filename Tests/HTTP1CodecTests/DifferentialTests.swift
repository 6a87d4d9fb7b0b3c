import Foundation
import HTTP1Codec
import HTTP1CodecOracle
import Testing

/// The codec against today's stack (NIOHTTP1's llhttp decoders inside ClientRequestDecoder and
/// UpstreamResponseDecoder, plus MessageFraming's rules and the machine's 414 and 101 checks), on
/// seeded generated and mutated messages cut into random reads, on the framing suite's cases (the
/// fuzz corpus seeds), and on what the fuzzer found. Both must give the same verdict and error
/// kind, the same messages, body bytes and trailers.
///
/// Disagreements kept by design, each with the clause that makes the codec right (details in
/// `Differential`):
/// 1. Extension methods (`FOO`, `get`): llhttp refuses methods outside its list; the codec accepts
///    any token. RFC 9110 §9.1 (method = token) and §16.1.1 (intermediaries pass new methods on).
/// 2. CONNECT with a Transfer-Encoding that cannot frame a body, or on HTTP/1.0: today a tunnel,
///    the codec 400/501. RFC 9112 §6.3 rule 4 and §6.1 apply to every request.
/// 3. A non-2xx answer to CONNECT: NIO drops its body, the codec reads it as framed; a 2xx is a
///    tunnel whatever its framing fields say. RFC 9112 §6.3 rule 2, RFC 9110 §9.3.6.
/// 4. Size limits at their edges: the codec counts head bytes as sent and answers 414 as soon as
///    the target passes 8192 bytes. RFC 9112 §3, RFC 9110 §15.5.15, RFC 6585 §5 leave the limit
///    to the recipient.
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
        ("GET / HTTP/1.1\r\nHost: a\r\n\r\n", .request, .GET)
    ]

    @Test(arguments: regressions.indices)
    func regression(_ index: Int) {
        let (text, role, method) = Self.regressions[index]
        let input = DifferentialInput(bytes: Array(text.utf8), method: method)
        if let report = Differential.check(input, role: role) { Issue.record(Comment(rawValue: report)) }
    }

    /// The by-design differences are real and stay as documented: each shows up, and is allowed.
    @Test func byDesignDifferences() {
        let cases: [(String, Role, DifferentialInput.Method)] = [
            ("FOO http://a.test/ HTTP/1.1\r\n\r\n", .request, .GET),
            ("CONNECT a.test:443 HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", .request, .GET),
            ("HTTP/1.1 407 Auth\r\nContent-Length: 4\r\n\r\nnope", .response, .CONNECT),
            ("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", .response, .CONNECT),
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
