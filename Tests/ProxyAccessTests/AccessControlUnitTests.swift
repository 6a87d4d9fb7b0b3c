import CCrypt
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import ProxyConfig
import Testing

@testable import ProxyAccess

@Suite struct ProxyCredentialsTests {
    private func parse(_ fields: [String]) -> ProxyCredentials.Parsed {
        ProxyCredentials.parse(HTTPHeaders(fields.map { ("Proxy-Authorization", $0) }))
    }

    @Test func basicCredentialsDecode() {
        // "alice:se:cret" — the password may contain ':'; the scheme is case-insensitive.
        #expect(parse(["basic YWxpY2U6c2U6Y3JldA=="]) == .basic(.init(user: "alice", password: "se:cret")))
        #expect(parse(["Basic   YTpi"]) == .basic(.init(user: "a", password: "b")))
        // UTF-8 user and password (charset="UTF-8" is advertised): "jürgen:pässword".
        #expect(parse(["Basic asO8cmdlbjpww6Rzc3dvcmQ="]).user == "jürgen")
    }

    @Test func unusableFieldsAreMalformed() {
        #expect(ProxyCredentials.parse(HTTPHeaders()) == .missing)
        // ... "a:b\0c" (a NUL would cut the password short for crypt_r).
        for bad in [["Basic"], ["Bearer abc"], ["Basic YWxpY2U="], ["Basic YWxp Y2U6eA=="], ["Basic YWxpY2U6eA"], ["Basic =YWx"],
                    ["Basic //79/A=="], ["Basic YTpi", "Basic YTpi"], ["Basic YTpiAGM="]] {
            guard case .malformed(let why) = parse(bad) else {
                Issue.record("\(bad) should be malformed")
                continue
            }
            #expect(!why.isEmpty)
        }
    }

    @Test func base64IsStrict() {
        #expect(Base64.decode("".utf8) == nil)
        #expect(Base64.decode("YQ==".utf8) == Array("a".utf8))
        #expect(Base64.decode("YWI=".utf8) == Array("ab".utf8))
        #expect(Base64.decode("YWJj".utf8) == Array("abc".utf8))
        #expect(Base64.decode("YQ=".utf8) == nil, "length not a multiple of 4")
        #expect(Base64.decode("Y===".utf8) == nil, "padding in the second place")
        #expect(Base64.decode("YQ==YWJj".utf8) == nil, "padding before the end")
        #expect(Base64.decode("YW-j".utf8) == nil, "URL-safe alphabet is not base64")
    }
}

extension ProxyCredentials.Parsed {
    var user: String? {
        if case .basic(let credentials) = self { return credentials.user }
        return nil
    }
}

@Suite struct PasswordHashTests {
    /// A hash made by libxcrypt itself for `setting` (its prefix and salt).
    static func hash(_ password: String, setting: String) -> String {
        var data = crypt_data()
        return String(cString: crypt_r(password, setting, &data))
    }

    @Test func acceptedSchemesVerify() throws {
        let hashes = [
            Self.hash("pw", setting: "$5$saltsaltsalt$"),
            Self.hash("pw", setting: "$6$rounds=5000$saltsalt$"),
            Self.hash("pw", setting: "$2b$04$abcdefghijklmnopqrstuu"),
            Self.hash("pw", setting: "$y$j9T$abcdefghijklmnop$"),
        ]
        for text in hashes {
            let hash = try PasswordHash.parse(text).get()
            #expect(hash.verify("pw"), "\(text)")
            #expect(!hash.verify("pW"), "\(text)")
            #expect(!hash.verify(""), "\(text)")
        }
        // $2y$ (PHP, htpasswd -B) is the same algorithm as $2b$.
        let b = Self.hash("pw", setting: "$2b$04$abcdefghijklmnopqrstuu")
        #expect(try PasswordHash.parse("$2y$" + b.dropFirst(4)).get().verify("pw"))
    }

    @Test func plainLegacyAndTruncatedHashesAreRefused() {
        let full5 = Self.hash("pw", setting: "$5$saltsaltsalt$")
        for text in ["secret", "$apr1$abc$defghijklmnopqrstuvwxy.", "$1$abc$defghijklmnopqrstuvwxy", "{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=",
                     "abJnggxhB/yWI", String(full5.dropLast()), "$2b$04$short", "$6$salt$", "$5$salt$" + String(repeating: "a", count: 43) + " "] {
            guard case .failure(let rejection) = PasswordHash.parse(text) else {
                Issue.record("\(text) should be refused")
                continue
            }
            #expect(!rejection.reason.isEmpty)
            #expect(!rejection.reason.contains(String(text.dropFirst(8))) || text.count < 12, "the reason must not echo the hash")
        }
    }

    @Test func constantTimeEqualityIsEquality() {
        #expect(ConstantTime.equal([1, 2, 3], [1, 2, 3]))
        #expect(!ConstantTime.equal([1, 2, 3], [1, 2, 4]))
        #expect(!ConstantTime.equal([1, 2, 3], [1, 2]))
        #expect(!ConstantTime.equal([], [0]))
        #expect(!ConstantTime.equal([UInt8](repeating: 0, count: 256), []), "lengths differing by 256 still differ")
    }
}

@Suite struct HtpasswdFileTests {
    private func parse(_ text: String) throws(HtpasswdFile.LoadError) -> HtpasswdFile {
        try HtpasswdFile.parse(Array(text.utf8), path: "users")
    }

    @Test func usersCommentsAndCRLF() throws {
        let five = PasswordHashTests.hash("a", setting: "$5$saltsaltsalt$")
        let six = PasswordHashTests.hash("b", setting: "$6$saltsalt$")
        let file = try parse("# users\r\n\nalice:\(five)\r\n  # indented comment\nbob:\(six):extra field\n")
        #expect(file.users.keys.sorted() == ["alice", "bob"])
        #expect(file.users["alice"]?.verify("a") == true)
        #expect(file.users["bob"]?.verify("b") == true)
    }

    @Test func refusalsNameTheLineNotItsContent() {
        let five = PasswordHashTests.hash("a", setting: "$5$saltsaltsalt$")
        let cases: [(String, Int?, String)] = [
            ("alice:\(five)\nbob:hunter2\n", 2, "plain-text"),
            ("alice:$apr1$xyz$abcdefghijklmnopqrstuv\n", 1, "unsupported hash scheme"),
            ("alice:\(five)\nalice:\(five)\n", 2, "twice"),
            ("no colon here\n", 1, "user:hash"),
            ("bad user:\(five)\n", 1, "invalid user name"),
            ("# only comments\n\n", nil, "no users"),
        ]
        for (text, line, reason) in cases {
            do {
                _ = try parse(text)
                Issue.record("\(text) should be refused")
            } catch {
                #expect(error.line == line, "\(text)")
                #expect(error.reason.contains(reason), "\(error)")
                #expect(!error.description.contains("hunter2"))
                #expect(error.description.hasPrefix("htpasswd file users"))
            }
        }
    }

    @Test func unreadableFileIsAnError() {
        #expect(throws: HtpasswdFile.LoadError.self) { try HtpasswdFile.load(path: "/nonexistent/users.htpasswd") }
    }
}

@Suite struct ClientAdmissionTests {
    private func address(_ ip: String, port: Int = 40000) -> SocketAddress {
        try! SocketAddress(ipAddress: ip, port: port)
    }

    @Test func defaultACLAdmitsPrivateAndLoopbackOnly() {
        let admission = ClientAdmission(allowedBlocks: ClientACL.defaultBlocks, maxConnections: 100, maxConnectionsPerClient: 100)
        for ip in ["127.0.0.1", "::1", "10.1.2.3", "172.16.0.9", "192.168.1.1", "100.64.0.1", "169.254.1.1", "fe80::1", "fd00::1",
                   "::ffff:10.0.0.1"] {
            #expect(admission.admit(address(ip)).verdict == .admitted, "\(ip)")
        }
        for ip in ["8.8.8.8", "172.32.0.1", "2001:db8::1", "::ffff:8.8.8.8", "100.128.0.1"] {
            guard case .notAllowed(let error) = admission.admit(address(ip)).verdict else {
                Issue.record("\(ip) should be refused")
                continue
            }
            #expect(error.status == .forbidden && error.message.contains("--allow-client"))
        }
        #expect(admission.rejectedByACL == 5)
        #expect(admission.admit(nil).verdict == .admitted, "a non-IP peer is not matched")
    }

    @Test func limitsCountOpenConnectionsAndFreeOnRelease() {
        let admission = ClientAdmission(allowedBlocks: ClientACL.defaultBlocks, maxConnections: 3, maxConnectionsPerClient: 2)
        let a1 = admission.admit(address("10.0.0.1"))
        let a2 = admission.admit(address("::ffff:10.0.0.1", port: 40001))
        #expect(a1.verdict == .admitted && a2.verdict == .admitted)
        #expect(a1.client == IPAddress("10.0.0.1") && a2.client == IPAddress("10.0.0.1"), "mapped IPv4 counts as the same client")
        guard case .overLimit(let perClient) = admission.admit(address("10.0.0.1", port: 40002)).verdict else {
            Issue.record("third connection from one client should be refused")
            return
        }
        #expect(perClient.message.contains("--max-connections-per-client") && perClient.asksToRetryLater)
        let b1 = admission.admit(address("10.0.0.2"))
        #expect(b1.verdict == .admitted)
        guard case .overLimit(let total) = admission.admit(address("10.0.0.3")).verdict else {
            Issue.record("fourth connection should be refused")
            return
        }
        #expect(total.message.contains("--max-connections"))
        #expect(admission.rejectedByLimits == 2)
        admission.release(a1.client!)
        #expect(admission.openConnections == 2)
        #expect(admission.admit(address("10.0.0.3")).verdict == .admitted, "a freed place is used again")
        #expect(admission.admit(address("10.0.0.1", port: 40003)).verdict == .overLimit(.tooManyConnections("the proxy has 3 open connections, its limit (--max-connections)")))
    }

    @Test func derivedMaxConnectionsFollowsTheFileLimit() {
        var configuration = ProxyConfiguration.defaults
        #expect(configuration.effectiveMaxConnections(openFileLimit: 1024) == 448)
        #expect(configuration.effectiveMaxConnections(openFileLimit: 64) == 16)
        configuration.maxConnections = 5
        #expect(configuration.effectiveMaxConnections(openFileLimit: 1 << 20) == 5)
    }
}

@Suite struct ProxyAuthenticatorTests {
    private func credentials(_ user: String, _ password: String) -> ProxyCredentials {
        let field = "Basic " + base64(Array("\(user):\(password)".utf8))
        return ProxyCredentials(user: user, password: password)
    }

    private func base64(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
        var out = ""
        var index = 0
        while index < bytes.count {
            let chunk = Array(bytes[index..<min(index + 3, bytes.count)])
            let value = chunk.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (16 - 8 * UInt32($1.offset)) }
            for place in 0..<4 {
                out.append(place <= chunk.count ? alphabet[Int(value >> (18 - 6 * UInt32(place)) & 0x3F)] : "=")
            }
            index += 3
        }
        return out
    }

    /// A started one-thread pool and a one-thread group for `body`, both shut down afterwards (the group
    /// first, by NIO's `withEventLoopGroup`) whether or not `body` threw.
    private func withPoolAndGroup(_ body: (NIOThreadPool, MultiThreadedEventLoopGroup) async throws -> Void) async throws {
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        do {
            try await MultiThreadedEventLoopGroup.withEventLoopGroup(numberOfThreads: 1) { try await body(pool, $0) }
        } catch {
            try? await pool.shutdownGracefully()
            throw error
        }
        try? await pool.shutdownGracefully()
    }

    @Test func plainHashedUnknownAndCachedVerdicts() async throws {
        try await withPoolAndGroup { pool, group in
            let htpasswd = temporaryHtpasswd("carol:\(PasswordHashTests.hash("c-pw", setting: "$2b$04$abcdefghijklmnopqrstuu"))\n")
            var configuration = ProxyConfiguration.defaults
            configuration.proxyAuth = [.credential(user: "alice", password: "a-pw"), .htpasswdFile(path: htpasswd)]
            configuration.proxyAuthRealm = "test realm"
            let authenticator = try #require(try ProxyAuthenticator.make(configuration, threadPool: pool))
            #expect(authenticator.challenge == "Basic realm=\"test realm\", charset=\"UTF-8\"")

            #expect(authenticator.verdictWithoutHashing(credentials("alice", "a-pw")) == .allowed(user: "alice"))
            #expect(authenticator.verdictWithoutHashing(credentials("alice", "a-pW")) == .denied(user: "alice", reason: "wrong password"))
            #expect(authenticator.verdictWithoutHashing(credentials("mallory", "x")) == nil,
                    "an unknown user is hashed too (against another user's hash), so timing does not tell users apart")
            #expect(authenticator.verdictWithoutHashing(credentials("carol", "c-pw")) == nil, "a hash is never computed on the caller's thread")

            let loop = group.next()
            #expect(try await authenticator.verify(credentials("mallory", "x"), on: loop).get() == .denied(user: "mallory", reason: "unknown user"))
            #expect(authenticator.verdictWithoutHashing(credentials("mallory", "x")) == .denied(user: "mallory", reason: "unknown user"), "cached")
            #expect(try await authenticator.verify(credentials("carol", "c-pw"), on: loop).get() == .allowed(user: "carol"))
            #expect(try await authenticator.verify(credentials("carol", "nope"), on: loop).get() == .denied(user: "carol", reason: "wrong password"))
            // Both verdicts are cached now: no hashing for either.
            #expect(authenticator.verdictWithoutHashing(credentials("carol", "c-pw")) == .allowed(user: "carol"))
            #expect(authenticator.verdictWithoutHashing(credentials("carol", "nope")) == .denied(user: "carol", reason: "wrong password"))
            #expect(authenticator.successes == 3 && authenticator.failures == 5)
            // The cache is keyed by the decoded credential, not the field's spelling.
            guard case .basic(let respelled) = ProxyCredentials.parse(
                HTTPHeaders([("Proxy-Authorization", "BASIC    " + base64(Array("carol:c-pw".utf8)))]))
            else {
                Issue.record("respelled field does not parse")
                return
            }
            #expect(authenticator.verdictWithoutHashing(respelled) == .allowed(user: "carol"))
        }
    }

    @Test func duplicateUsersAcrossSourcesStopTheStart() {
        let pool = NIOThreadPool(numberOfThreads: 1)
        let htpasswd = temporaryHtpasswd("alice:\(PasswordHashTests.hash("x", setting: "$5$saltsaltsalt$"))\n")
        var configuration = ProxyConfiguration.defaults
        configuration.proxyAuth = [.credential(user: "alice", password: "a"), .htpasswdFile(path: htpasswd)]
        #expect(throws: HtpasswdFile.LoadError.self) { try ProxyAuthenticator.make(configuration, threadPool: pool) }
        configuration.proxyAuth = []
        let none = try? ProxyAuthenticator.make(configuration, threadPool: pool)
        #expect(none == nil)
    }
}

/// A file with `text` in the system temporary directory.
func temporaryHtpasswd(_ text: String) -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("proxycore-test-\(UUID().uuidString).htpasswd").path
    FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
    return path
}
