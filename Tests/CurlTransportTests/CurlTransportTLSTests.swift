import CurlTransport
import Testing
import TestSupport

/// The resolver service over HTTPS: reached by a pinned IP, verified against the URL's name.
@Suite("CurlTransport TLS to a pinned resolver")
struct CurlTransportTLSTests {
    /// `request` fails with a TLS error; `accepted` is recorded when it succeeds.
    static func expectRefusedTLS(_ transport: CurlTransport, _ request: CurlRequest, _ accepted: Comment) async {
        do {
            _ = try await transport.send(request)
            Issue.record(accepted)
        } catch let error as CurlTransportError {
            #expect(error.shortDescription == "tls")
        } catch {
            Issue.record("not a CurlTransportError: \(error)")
        }
    }

    @Test("the certificate is checked against the URL's host, not the pinned IP")
    func verifiesTheServiceName() async throws {
        let ca = try TestCA()
        let caFile = try ca.writeCAFile()
        let good = try ca.issueLeaf(dnsNames: ["localhost"])
        let origin = try await TLSTestOrigin.start(certificatePEM: good.certificatePEM, privateKeyPEM: good.privateKeyPEM)
        let transport = CurlTransport()
        defer { transport.shutdown() }

        var request = CurlRequest(url: "https://localhost:\(origin.port)/hello")
        request.pinnedAddresses = ["127.0.0.1"]
        request.caFile = caFile
        let response = try await transport.send(request)
        #expect(response.status == 200)
        #expect(response.body == Array("hello".utf8))
        #expect(origin.connections.first?.serverName == "localhost")

        // Without the private CA the same service is untrusted.
        request.caFile = nil
        await Self.expectRefusedTLS(transport, request, "an untrusted certificate was accepted")
        try await origin.shutdown()
    }

    @Test("a certificate for another name is refused")
    func wrongNameIsRefused() async throws {
        let ca = try TestCA()
        let caFile = try ca.writeCAFile()
        let other = try ca.issueLeaf(dnsNames: ["other.test"], ipAddresses: ["127.0.0.1"])
        let origin = try await TLSTestOrigin.start(certificatePEM: other.certificatePEM, privateKeyPEM: other.privateKeyPEM)
        let transport = CurlTransport()
        defer { transport.shutdown() }
        var request = CurlRequest(url: "https://localhost:\(origin.port)/hello")
        request.pinnedAddresses = ["127.0.0.1"]
        request.caFile = caFile
        await Self.expectRefusedTLS(transport, request, "a certificate for another name was accepted")
        try await origin.shutdown()
    }

    @Test("the system store as a hashed directory: its anchors verify, an unrelated directory's do not")
    func hashedDirectory() async throws {
        let ca = try TestCA()
        let good = try ca.issueLeaf(dnsNames: ["localhost"])
        let origin = try await TLSTestOrigin.start(certificatePEM: good.certificatePEM, privateKeyPEM: good.privateKeyPEM)
        let transport = CurlTransport()
        defer { transport.shutdown() }
        var request = CurlRequest(url: "https://localhost:\(origin.port)/hello")
        request.pinnedAddresses = ["127.0.0.1"]
        request.caDirectory = try ca.writeHashedDirectory()
        let response = try await transport.send(request)
        #expect(response.status == 200)
        #expect(response.body == Array("hello".utf8))

        // A fresh transport (no connection to reuse) trusting another CA's directory.
        let other = CurlTransport()
        defer { other.shutdown() }
        request.caDirectory = try TestCA(commonName: "Unrelated Test CA").writeHashedDirectory()
        await Self.expectRefusedTLS(other, request, "a certificate outside the directory was accepted")
        try await origin.shutdown()
    }
}
