import Foundation
import OpenSSLTLS
import Testing
import TestSupport

@Suite("The system trust store: a hashed directory read on demand instead of the whole bundle")
struct SystemTrustLocationTests {
    @Test("detect: the hashed directory when it has anchors and the environment names no other store")
    func detection() throws {
        let ca = try TestCA()
        let hashed = try ca.writeHashedDirectory()
        let plain = (try ca.writeCAFile() as NSString).deletingLastPathComponent   // only ca.pem
        let none: (String) -> String? = { _ in nil }
        #expect(SystemTrustLocation.detect(environment: none, directory: hashed) == .hashedDirectory(hashed))
        #expect(SystemTrustLocation.detect(environment: none, directory: plain) == .openSSLDefaults)
        #expect(SystemTrustLocation.detect(environment: none, directory: hashed + "/missing") == .openSSLDefaults)
        for variable in ["SSL_CERT_FILE", "SSL_CERT_DIR"] {
            let set: (String) -> String? = { $0 == variable ? "/somewhere" : nil }
            #expect(SystemTrustLocation.detect(environment: set, directory: hashed) == .openSSLDefaults, "\(variable)")
        }
    }

    @Test("a context on a hashed directory holds no anchor until a chain needs one, then verifies with it")
    func onDemand() async throws {
        let fixture = try Fixture()
        let directory = try fixture.ca.writeHashedDirectory()
        let leaf = try fixture.ca.issueLeaf(dnsNames: ["origin.test"])
        let context = try fixture.clientContext {
            $0.caFile = nil
            $0.useSystemTrustStore = true
            $0.systemTrustLocation = .hashedDirectory(directory)
        }
        #expect(context.trustStoreObjectCount == 0)
        try await fixture.withOrigin(leaf) { origin in
            let outcome = try await fixture.get(origin: origin, context: context)
            #expect(outcome.response?.status == 200)
        }
        #expect(context.trustStoreObjectCount == 1)
    }

    @Test("a hashed directory without the origin's CA: the certificate is refused")
    func unknownAnchor() async throws {
        let fixture = try Fixture()
        let directory = try TestCA(commonName: "Unrelated Test CA").writeHashedDirectory()
        let leaf = try fixture.ca.issueLeaf(dnsNames: ["origin.test"])
        let context = try fixture.clientContext {
            $0.caFile = nil
            $0.useSystemTrustStore = true
            $0.systemTrustLocation = .hashedDirectory(directory)
        }
        try await fixture.withOrigin(leaf) { origin in
            let outcome = try await fixture.get(origin: origin, context: context)
            #expect(outcome.tlsError?.kind == .certificateInvalid)
            #expect(outcome.response == nil)
        }
    }

    @Test("OpenSSL's defaults load the whole bundle at creation: what the directory saves")
    func defaultsLoadTheBundle() throws {
        let bundle = SystemTrustLocation.openSSLDefaultFile
        guard FileManager.default.isReadableFile(atPath: bundle) else {
            print("SKIPPED: no system CA bundle at \(bundle) (apt-get install ca-certificates)")
            return
        }
        let fixture = try Fixture()
        let defaults = try fixture.clientContext {
            $0.caFile = nil
            $0.useSystemTrustStore = true
            $0.systemTrustLocation = .openSSLDefaults
        }
        #expect(defaults.trustStoreObjectCount > 50)
        // This system's own directory, as a process without SSL_CERT_FILE / SSL_CERT_DIR sees it.
        let location = SystemTrustLocation.detect(environment: { _ in nil })
        guard case .hashedDirectory = location else {
            print("SKIPPED: this system keeps no hashed anchor directory; contexts read the bundle (\(bundle))")
            return
        }
        let detected = try fixture.clientContext {
            $0.caFile = nil
            $0.useSystemTrustStore = true
            $0.systemTrustLocation = location
        }
        #expect(detected.trustStoreObjectCount == 0)
    }
}
