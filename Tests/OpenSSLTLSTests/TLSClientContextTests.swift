import OpenSSLTLS
import Testing
import TestSupport

@Suite("TLSClientContext and TLSError")
struct TLSClientContextTests {
    @Test("unreadable CA file → configuration error naming the file")
    func missingCAFile() {
        var configuration = TLSClientConfiguration()
        configuration.caFile = "/nonexistent/ca.pem"
        #expect {
            _ = try TLSClientContext(configuration: configuration)
        } throws: { error in
            guard let error = error as? TLSError else { return false }
            return error.kind == .configuration && error.description.contains("/nonexistent/ca.pem")
        }
    }

    @Test("ALPN names must be 1...255 bytes")
    func invalidALPN() {
        var configuration = TLSClientConfiguration()
        configuration.alpn = [""]
        #expect(throws: TLSError.self) { _ = try TLSClientContext(configuration: configuration) }
        configuration.alpn = [String(repeating: "h", count: 256)]
        #expect(throws: TLSError.self) { _ = try TLSClientContext(configuration: configuration) }
    }

    @Test("defaults")
    func defaults() throws {
        let configuration = TLSClientConfiguration()
        #expect(configuration.caFile == nil)
        #expect(configuration.useSystemTrustStore)
        #expect(configuration.alpn == ["http/1.1"])
        #expect(configuration.handshakeTimeout == .seconds(10))
        let context = try TLSClientContext(configuration: configuration)
        #expect(context.cachedSessionCount == 0)
    }

    @Test("shortDescription is label-safe: never the host or reason")
    func shortDescriptions() {
        let errors: [TLSError] = [
            .certificateInvalid(host: "api.example.com", reason: "hostname mismatch"),
            .handshakeFailed(host: "api.example.com", reason: "tlsv1 alert protocol version"),
            .handshakeTimeout(host: "api.example.com", after: .seconds(10)),
            .protocolError(host: "api.example.com", reason: "decryption failed"),
            .closedDuringHandshake(host: "api.example.com"),
            .io(host: "api.example.com", reason: "x"),
            .configuration(reason: "bad"),
        ]
        let labels = errors.map(\.shortDescription)
        #expect(Set(labels).count == errors.count)
        for (error, label) in zip(errors, labels) {
            #expect(!label.contains("example"))
            #expect(label.allSatisfy { $0.isLowercase || $0 == "_" })
            if error.kind != .configuration {
                #expect(error.description.contains("api.example.com"))
            }
        }
        #expect(errors[0].description == "certificate for api.example.com is not valid: hostname mismatch")
    }

    @Test("TestCA pins are stable and distinct per key")
    func spkiPins() throws {
        let ca = try TestCA()
        let a = try ca.issueLeaf(dnsNames: ["a.test"])
        let b = try ca.issueLeaf(dnsNames: ["a.test"])
        #expect(try a.spkiSHA256Base64() == TestCA.spkiSHA256Base64(a.certificatePEM))
        #expect(try a.spkiSHA256Base64() != b.spkiSHA256Base64())
        #expect(try a.spkiSHA256Base64().count == 44)
    }
}
