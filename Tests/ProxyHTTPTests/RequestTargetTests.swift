import Testing

@testable import ProxyKit
@testable import ProxyHTTP

@Suite struct RequestTargetTests {
    @Test func absoluteFormWithPortPathAndQuery() throws {
        let target = try RequestTarget.parseAbsolute("http://Example.COM:8080/a/b?x=1#frag")
        #expect(target.scheme == .http)
        #expect(target.host == "example.com")
        #expect(target.port == 8080)
        #expect(target.pathAndQuery == "/a/b?x=1")
        #expect(target.authority == "example.com:8080")
    }

    @Test func defaultsPortAndPath() throws {
        let http = try RequestTarget.parseAbsolute("http://example.com")
        #expect(http.port == 80)
        #expect(http.pathAndQuery == "/")
        #expect(http.authority == "example.com")
        let https = try RequestTarget.parseAbsolute("HTTPS://example.com?q")
        #expect(https.scheme == .https)
        #expect(https.port == 443)
        #expect(https.pathAndQuery == "/?q")
    }

    @Test func bracketedIPv6() throws {
        let target = try RequestTarget.parseAbsolute("http://[::1]:8080/x")
        #expect(target.host == "::1")
        #expect(target.port == 8080)
        #expect(target.authority == "[::1]:8080")
        #expect(target.isIPv6Literal)
    }

    @Test(arguments: ["/path", "*"])
    func originFormIsRejectedAsSuch(uri: String) {
        #expect(throws: ProxyError.self) { try RequestTarget.parseAbsolute(uri) }
        do {
            _ = try RequestTarget.parseAbsolute(uri)
        } catch {
            #expect(error.shortDescription == "origin_form_request")
            #expect(error.status == .badRequest)
        }
    }

    @Test(arguments: [
        "http://", "http://:80/", "http://user:pw@host/", "http://host:0/", "http://host:65536/",
        "http://host:8x/", "http://[::1/", "http://[zz]/", "http://ho st/", "http//host/", "http:/host/",
    ])
    func malformedTargets(uri: String) {
        do {
            _ = try RequestTarget.parseAbsolute(uri)
            Issue.record("accepted \(uri)")
        } catch {
            #expect(error.status == .badRequest, "\(uri): \(error)")
        }
    }

    @Test func unsupportedSchemeIs501() {
        do {
            _ = try RequestTarget.parseAbsolute("ftp://example.com/")
            Issue.record("accepted ftp")
        } catch {
            #expect(error.status == .notImplemented)
        }
    }

    @Test func connectAuthority() throws {
        let v4 = try RequestTarget.parseConnectAuthority("example.com:443")
        #expect(v4.host == "example.com")
        #expect(v4.port == 443)
        let v6 = try RequestTarget.parseConnectAuthority("[2001:db8::1]:8443")
        #expect(v6.host == "2001:db8::1")
        #expect(v6.port == 8443)
        #expect(throws: ProxyError.self) { try RequestTarget.parseConnectAuthority("example.com") }
        #expect(throws: ProxyError.self) { try RequestTarget.parseConnectAuthority("[::1]") }
        #expect(throws: ProxyError.self) { try RequestTarget.parseConnectAuthority(":443") }
    }
}
