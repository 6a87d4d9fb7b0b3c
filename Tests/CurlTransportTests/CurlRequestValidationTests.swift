@testable import CurlTransport
import Testing

@Suite("Request validation and redaction (no network)")
struct CurlRequestValidationTests {
    @Test("pinned addresses become CURLOPT_RESOLVE forms", arguments: [
        ("192.0.2.1", "192.0.2.1"),
        ("2001:db8::1", "[2001:db8::1]"),
        ("[2001:db8::1]", "[2001:db8::1]"),
        ("::1", "[::1]"),
    ])
    func resolveForm(input: String, expected: String) {
        #expect(CurlRequest.resolveForm(of: input) == expected)
    }

    @Test("names and junk are not pinned addresses", arguments: ["localhost", "1.2.3", "", "[1.2.3.4]x", "1.2.3.4:80"])
    func resolveFormRejects(input: String) {
        #expect(CurlRequest.resolveForm(of: input) == nil)
    }

    @Test("the resolve entry pins the URL's host (as spelled) and default port")
    func resolveEntry() throws {
        var request = CurlRequest(url: "https://DNS.Example.com/resolve?name=x")
        request.pinnedAddresses = ["192.0.2.1", "2001:db8::1"]
        let target = try RequestTarget(url: request.url)
        #expect(try request.resolveEntry(for: target) == "DNS.Example.com:443:192.0.2.1,[2001:db8::1]")
        request.pinnedAddresses = []
        #expect(try request.resolveEntry(for: target) == nil)
    }

    @Test("the redacted URL keeps scheme, host, port and path only")
    func redactedURL() throws {
        let target = try RequestTarget(url: "http://u:longpassword@example.com:8080/d/path?host=a.com&s=SIGNATURE123&key=K")
        #expect(target.redactedURL == "http://example.com:8080/d/path")
        let leaked = "GET http://u:longpassword@example.com:8080/d/path?host=a.com&s=SIGNATURE123&key=K SIGNATURE123 key=K longpassword port 8080"
        let redacted = target.redact(leaked)
        for secret in ["SIGNATURE123", "key=K", "longpassword", "host=a.com"] {
            #expect(!redacted.contains(secret), "\(secret) left in \(redacted)")
        }
        // Ordinary text (ports, words) survives.
        #expect(redacted.hasSuffix("port 8080"))
    }

    @Test("durations become libcurl milliseconds, rounded up, never 0 for positive")
    func milliseconds() {
        #expect(Duration.milliseconds(300).curlMilliseconds == 300)
        #expect(Duration.microseconds(1).curlMilliseconds == 1)
        #expect(Duration.seconds(3).curlMilliseconds == 3000)
        #expect(Duration.zero.curlMilliseconds == 0)
        #expect(Duration.milliseconds(-5).curlMilliseconds == 0)
    }

    @Test("every error kind has a distinct bounded label")
    func labels() {
        let labels = CurlTransportError.Kind.all.map(\.description)
        #expect(Set(labels).count == labels.count)
        #expect(labels.allSatisfy { $0.allSatisfy { $0.isLowercase || $0 == "_" } })
    }
}
