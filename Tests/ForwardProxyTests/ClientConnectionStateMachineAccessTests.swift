import NIOCore
import NIOHTTP1
import ProxyConfig
import Testing

@testable import ProxyKit
@testable import ProxyHTTP
@testable import ProxyAccess
@testable import ProxyUpstream
@testable import ForwardProxy

/// The machine's access-control and read-ahead decisions: admission at activation, the 407 flow
/// (credentials checked before anything else, the connection kept for the retry or closed), and
/// the bounded pipelining queue.
@Suite struct ClientConnectionStateMachineAccessTests {
    typealias Machine = ClientConnectionStateMachine

    private static let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)
    private func at(_ seconds: Int64) -> NIODeadline { Self.t0 + .seconds(seconds) }
    private var route: UpstreamRoute { UpstreamRoute(host: "a.test", port: 80, tls: nil) }
    private let fresh = UpstreamConnectInfo(pooled: false, dialedIP: "192.0.2.1", source: "httpdns", resolveMs: 1, connectMs: 2)
    private static let aliceField = "Basic YWxpY2U6c2VjcmV0"  // alice:secret

    private func machine(auth: Bool = false) -> Machine {
        var configuration = ProxyConfiguration.defaults
        configuration.clientIdleTimeout = .seconds(60)
        return Machine(
            settings: .init(
                configuration: configuration, via: ViaHeader(pseudonym: "hp"), client: "127.0.0.1:5000",
                recordsEnabled: true, authenticator: auth ? .forTests : nil
            ),
            now: Self.t0
        )
    }

    private func head(
        _ method: HTTPMethod = .GET, _ uri: String = "http://a.test/p", _ headers: [(String, String)] = [], version: HTTPVersion = .http1_1
    ) -> RequestHead {
        RequestHead(method, uri, headers, version: version)
    }

    private func credentials(_ field: String = aliceField) -> ProxyCredentials {
        guard case .basic(let credentials) = ProxyCredentials.parse(HTTPHeaders([("Proxy-Authorization", field)])) else {
            preconditionFailure("test credentials do not parse")
        }
        return credentials
    }

    // MARK: admission

    @Test func refusedAdmissionAnswersAtActivationAndReadsNothing() {
        for (verdict, status) in [
            (ClientAdmission.Verdict.notAllowed(.clientNotAllowed(IPAddress("192.0.2.7")!)), 403),
            (.overLimit(.tooManyConnections("full")), 503),
        ] {
            var m = machine()
            guard case .respondWithError(let error, let record, let closeUpstream) = m.activated(now: Self.t0, draining: false, admission: verdict).effect
            else {
                Issue.record("expected an error answer for \(verdict)")
                continue
            }
            #expect(Int(error.status.code) == status)
            #expect(record.status == status && record.error == error.message)
            #expect(!closeUpstream)
            #expect(!m.readAllowed, "nothing of the request may be read")
            #expect(m.readRequested() == .none, "a read NIO asks for waits")
            #expect(m.requestPart(.head(head()), now: at(1), draining: false) == .none, "a head that slipped through is not served")
        }
        #expect(ProxyError.tooManyConnections("x").asksToRetryLater)
        #expect(!ProxyError.clientNotAllowed(IPAddress("192.0.2.7")!).asksToRetryLater)
    }

    @Test func admittedActivationIsUnchanged() {
        var m = machine()
        #expect(m.activated(now: Self.t0, draining: false, admission: .admitted) == .scheduleTimer(at(60)))
    }

    // MARK: authentication

    @Test func noCredentialsGet407BeforeAnyDialAndTheConnectionStaysForTheRetry() {
        var m = machine(auth: true)
        _ = m.activated(now: Self.t0, draining: false)
        guard case .refuseCredentials(let error, let record, let keepAlive) = m.requestPart(.head(head()), now: at(1), draining: false).effect else {
            Issue.record("expected 407")
            return
        }
        #expect(error.status == .proxyAuthenticationRequired)
        #expect(error.message.contains("Proxy-Authorization"))
        #expect(record.status == 407 && record.host == "a.test" && record.user == nil)
        #expect(keepAlive)
        // The refused request's end is dropped; the connection waits for the next request (the
        // idle timer, due at t+60, re-arms for t+61 when it fires).
        #expect(m.requestPart(.end(nil), now: at(1), draining: false) == .none)
        #expect(m.timerFired(now: at(60)) == .scheduleTimer(at(61)))
        guard case .idle = m.phase else { Issue.record("\(m.phase)"); return }
        // The retry with credentials is checked, then served.
        #expect(m.requestPart(.head(head(.GET, "http://a.test/p", [("Proxy-Authorization", Self.aliceField)])), now: at(2), draining: false)
            == .authenticate(credentials(), by: .forTests))
        #expect(!m.readAllowed, "nothing is read while the check runs")
        #expect(m.requestPart(.end(nil), now: at(2), draining: false) == .none, "queued meanwhile")
        #expect(m.serveQueued(now: at(2), draining: false) == Machine.Action(.none, then: .releaseDecoder), "queued parts wait for the verdict")
        #expect(m.queuedParts == 1)
        #expect(m.credentialsChecked(.allowed(user: "alice"), now: at(2), draining: false)
            == Machine.Action(.connectUpstream(route), then: .serveQueue), "then the parts that waited are served")
        #expect(m.currentRecord?.user == "alice")
        #expect(m.serveQueued(now: at(2), draining: false) == Machine.Action(.none, then: .serveQueue), "the request's end follows the verdict")
        #expect(m.queuedParts == 0)
        guard case .sendRequest(_, let buffered, _, _) = m.upstream(.connected(fresh), now: at(2)).effect else {
            Issue.record("expected the request to go out")
            return
        }
        #expect(buffered == [.end(nil)])
    }

    @Test func aRepeatedVerifiedFieldSkipsTheCheckAnyOtherIsCheckedAgain() {
        var m = machine(auth: true)
        _ = m.activated(now: Self.t0, draining: false)
        let withAlice = head(.GET, "http://a.test/p", [("Proxy-Authorization", Self.aliceField)])
        #expect(m.requestPart(.head(withAlice), now: at(1), draining: false) == .authenticate(credentials(), by: .forTests))
        _ = m.credentialsChecked(.allowed(user: "alice"), now: at(1), draining: false)
        _ = m.requestPart(.end(nil), now: at(1), draining: false)
        _ = m.upstream(.connected(fresh), now: at(1))
        _ = m.upstream(.head(ResponseHead(.ok, [("Content-Length", "0")])), now: at(1))
        _ = m.upstream(.end(nil), now: at(1))
        // The same field again: served at once, logged with the user.
        #expect(m.requestPart(.head(withAlice), now: at(2), draining: false) == .connectUpstream(route))
        #expect(m.currentRecord?.user == "alice")
        _ = m.requestPart(.end(nil), now: at(2), draining: false)
        _ = m.upstream(.connected(fresh), now: at(2))
        _ = m.upstream(.head(ResponseHead(.ok, [("Content-Length", "0")])), now: at(2))
        _ = m.upstream(.end(nil), now: at(2))
        // Another field (another user, or the same one twice) is checked again; none is refused.
        let bob = "Basic Ym9iOnB3"  // bob:pw
        #expect(m.requestPart(.head(head(.GET, "http://a.test/p", [("Proxy-Authorization", bob)])), now: at(3), draining: false)
            == .authenticate(credentials(bob), by: .forTests))
        var other = machine(auth: true)
        _ = other.activated(now: Self.t0, draining: false)
        guard case .refuseCredentials = other.requestPart(
            .head(head(.GET, "http://a.test/p", [("Proxy-Authorization", Self.aliceField), ("Proxy-Authorization", Self.aliceField)])),
            now: at(1), draining: false).effect
        else {
            Issue.record("two fields must be refused")
            return
        }
    }

    /// The machine builds the answers the proxy writes itself from its settings: the 407's
    /// challenge comes from the authenticator of the settings snapshot, which a reload replaces
    /// from the next request on.
    @Test func theRefusalsHeadIsBuiltFromTheSettings() throws {
        var m = machine(auth: true)
        _ = m.activated(now: Self.t0, draining: false)
        guard case .refuseCredentials(let answer, let record, true) = m.requestPart(.head(head()), now: at(1), draining: false).effect else {
            Issue.record("expected a 407 that keeps the connection")
            return
        }
        #expect(answer.head.status == .proxyAuthenticationRequired)
        #expect(answer.body == answer.error.message + "\n")
        #expect(record.bytesDown == answer.body.utf8.count)
        let names = answer.head.headers.map(\.name)
        #expect(names == [
            "Content-Type", "Content-Length", "Connection", "Cache-Control", "X-Proxy-Error", "Proxy-Status",
            "X-Content-Type-Options", "Proxy-Authenticate",
        ])
        #expect(answer.head.headers["Connection"] == ["keep-alive"])
        #expect(answer.head.headers["Content-Length"] == ["\(answer.body.utf8.count)"])
        #expect(answer.head.headers["Proxy-Authenticate"] == [ProxyAuthenticator.forTests.challenge])
        #expect(answer.head.headers["Proxy-Status"] == [ProxyStatus.fieldValue(for: answer.error)])

        // A reload that turns authentication off applies to the next request: it is served.
        _ = m.requestPart(.end(nil), now: at(1), draining: false)
        _ = m.reloaded(configuration: m.settings.configuration, authenticator: nil)
        #expect(m.requestPart(.head(head()), now: at(2), draining: false) == .connectUpstream(route))
    }

    @Test func aReloadedAuthenticatorChecksTheNextRequest() throws {
        var m = machine(auth: false)
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.reloaded(configuration: m.settings.configuration, authenticator: .forTests)
        #expect(m.requestPart(.head(head(.GET, "http://a.test/p", [("Proxy-Authorization", Self.aliceField)])), now: at(1), draining: false)
            == .authenticate(credentials(), by: .forTests))
    }

    @Test func overloadAnswersSayWhenToRetry() {
        var m = machine(auth: true)
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(head(.GET, "http://a.test/p", [("Proxy-Authorization", Self.aliceField)])), now: at(1), draining: false)
        guard case .respondWithError(let answer, _, _) = m.credentialsChecked(.busy, now: at(1), draining: false).effect else {
            Issue.record("expected 503")
            return
        }
        #expect(answer.head.headers["Retry-After"] == ["\(ProxyError.retryAfterSeconds)"])
        #expect(answer.head.headers["Connection"] == ["close"])
        #expect(answer.head.headers["Proxy-Authenticate"] == [], "only a 407 challenges")
    }

    @Test func wrongCredentialsGet407NamingTheUserNeverThePassword() {
        var m = machine(auth: true)
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(head(.GET, "http://a.test/p", [("Proxy-Authorization", Self.aliceField)])), now: at(1), draining: false)
        guard case .refuseCredentials(let error, let record, let keepAlive) = m.credentialsChecked(
            .denied(user: "alice", reason: "wrong password"), now: at(1), draining: false).effect
        else {
            Issue.record("expected 407")
            return
        }
        #expect(error.message.contains("alice") && !error.message.contains("secret"))
        #expect(record.user == "alice")
        #expect(keepAlive)
    }

    @Test func malformedCredentialsAre407WithTheReason() {
        for field in ["Digest username=x", "Basic !!!", "Basic YWxpY2U="] {
            var m = machine(auth: true)
            _ = m.activated(now: Self.t0, draining: false)
            guard case .refuseCredentials(let error, _, _) = m.requestPart(
                .head(head(.GET, "http://a.test/p", [("Proxy-Authorization", field)])), now: at(1), draining: false).effect
            else {
                Issue.record("expected 407 for \(field)")
                continue
            }
            #expect(error.status == .proxyAuthenticationRequired, "\(field)")
        }
    }

    @Test func refusalsCloseWhenTheDecoderCannotGoOn() {
        // A body (not read), a CONNECT followed by bytes (tunnel bytes sent ahead), an upgrade (the
        // decoder stops parsing after it), HTTP/1.0 without keep-alive, and draining all close
        // after the 407.
        var connectWithBytesAfter = head(.CONNECT, "a.test:443")
        connectWithBytesAfter.bytesFollowed = true
        let cases: [(RequestHead, Bool)] = [
            (head(.POST, "http://a.test/p", [("Content-Length", "5")]), false),
            (head(.POST, "http://a.test/p", [("Transfer-Encoding", "chunked")]), false),
            (connectWithBytesAfter, false),
            (head(.CONNECT, "a.test:443", version: .http1_0), false),
            (head(.GET, "http://a.test/ws", [("Connection", "upgrade"), ("Upgrade", "websocket")]), false),
            (head(.GET, "http://a.test/p", [("Connection", "close")]), false),
            (head(.GET, "http://a.test/p"), true),
        ]
        for (request, draining) in cases {
            var m = machine(auth: true)
            _ = m.activated(now: Self.t0, draining: false)
            guard case .refuseCredentials(_, let record, let keepAlive) = m.requestPart(.head(request), now: at(1), draining: draining).effect else {
                Issue.record("expected 407 for \(request.method) \(request.headers)")
                continue
            }
            #expect(!keepAlive, "\(request.method) \(request.headers) draining=\(draining)")
            #expect(!m.readAllowed)
            if request.method == .CONNECT { #expect(record.host == "a.test" && record.port == 443) }
        }
    }

    /// Chromium and Java retry a CONNECT with credentials on the connection the 407 came on.
    @Test func aConnectWithNothingAfterItsHeadGetsA407ThatKeepsTheConnectionForTheRetry() {
        var m = machine(auth: true)
        _ = m.activated(now: Self.t0, draining: false)
        guard case .refuseCredentials(let answer, let record, let keepAlive) = m.requestPart(.head(head(.CONNECT, "a.test:443")), now: at(1), draining: false).effect
        else {
            Issue.record("expected 407")
            return
        }
        #expect(keepAlive)
        #expect(answer.head.headers["Connection"] == ["keep-alive"])
        #expect(record.status == 407 && record.host == "a.test" && record.port == 443)
        #expect(m.requestPart(.end(nil), now: at(1), draining: false) == .none, "the CONNECT's end is dropped")
        guard case .idle = m.phase else { Issue.record("\(m.phase)"); return }
        #expect(m.requestPart(.head(head(.CONNECT, "a.test:443", [("Proxy-Authorization", Self.aliceField)])), now: at(2), draining: false)
            == .authenticate(credentials(), by: .forTests), "the retry is checked")
    }

    @Test func connectWithGoodCredentialsIsDialedAndLoggedWithTheUser() {
        var m = machine(auth: true)
        _ = m.activated(now: Self.t0, draining: false)
        #expect(m.requestPart(.head(head(.CONNECT, "a.test:443", [("Proxy-Authorization", Self.aliceField)])), now: at(1), draining: false)
            == .authenticate(credentials(), by: .forTests))
        guard case .connectTunnel(let target) = m.credentialsChecked(.allowed(user: "alice"), now: at(1), draining: false).effect else {
            Issue.record("expected the tunnel dial")
            return
        }
        #expect(target.host == "a.test" && target.port == 443)
        #expect(m.phase == .tunnel)
        #expect(m.currentRecord?.user == "alice")
    }

    @Test func aMalformedBodyDuringTheCheckIsAnsweredAtOnceAndTheVerdictIgnored() {
        var m = machine(auth: true)
        _ = m.activated(now: Self.t0, draining: false)
        let post = head(.POST, "http://a.test/p", [("Proxy-Authorization", Self.aliceField), ("Transfer-Encoding", "chunked")])
        #expect(m.requestPart(.head(post), now: at(1), draining: false) == .authenticate(credentials(), by: .forTests))
        _ = m.requestPart(.body(ByteBuffer(string: "hello")), now: at(1), draining: false)
        guard case .respondWithError(let error, _, let closeUpstream) = m.parseError(.malformed("invalid chunk size in the chunked body"), now: at(1)).effect else {
            Issue.record("expected an immediate 400")
            return
        }
        #expect(error.status == .badRequest && !closeUpstream)
        #expect(m.credentialsChecked(.allowed(user: "alice"), now: at(2), draining: false) == .none, "nothing is dialed afterwards")
        #expect(m.queuedParts == 0)
    }

    @Test func bodyBeyondTheBoundDuringTheCheckIsRefusedNotDropped() {
        var m = machine(auth: true)
        _ = m.activated(now: Self.t0, draining: false)
        let post = head(.POST, "http://a.test/p", [("Proxy-Authorization", Self.aliceField), ("Content-Length", "2000000")])
        _ = m.requestPart(.head(post), now: at(1), draining: false)
        let chunk = ByteBuffer(repeating: 0x61, count: 64 * 1024)
        var answer = ClientConnectionAction(.none)
        for _ in 0..<(PipelineQueue.maxQueuedBodyBytes / chunk.readableBytes + 1) {
            answer = m.requestPart(.body(chunk), now: at(1), draining: false)
        }
        guard case .respondWithError(let error, _, _) = answer.effect else {
            Issue.record("expected 503 once the bound is passed")
            return
        }
        #expect(error.status == .serviceUnavailable)
        #expect(m.credentialsChecked(.allowed(user: "alice"), now: at(2), draining: false) == .none)
    }

    @Test func tooManyChecksIs503AndCloses() {
        var m = machine(auth: true)
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(head(.GET, "http://a.test/p", [("Proxy-Authorization", Self.aliceField)])), now: at(1), draining: false)
        guard case .respondWithError(let error, _, _) = m.credentialsChecked(.busy, now: at(1), draining: false).effect else {
            Issue.record("expected 503")
            return
        }
        #expect(error.status == .serviceUnavailable && error.asksToRetryLater)
        #expect(m.phase == .closing, "\(m.phase)")
    }

    @Test func aVerdictForNoPendingCheckIsIgnored() {
        var m = machine(auth: true)
        _ = m.activated(now: Self.t0, draining: false)
        #expect(m.credentialsChecked(.allowed(user: "alice"), now: at(1), draining: false) == .none)
    }

    @Test func withoutAuthenticationAProxyAuthorizationFieldIsIgnored() {
        var m = machine(auth: false)
        _ = m.activated(now: Self.t0, draining: false)
        #expect(m.requestPart(.head(head(.GET, "http://a.test/p", [("Proxy-Authorization", Self.aliceField)])), now: at(1), draining: false)
            == .connectUpstream(route))
    }

    // MARK: bounded read-ahead

    @Test func theReadAheadMarkIsReachedLongBeforeTheHardBound() {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(head()), now: at(1), draining: false)
        _ = m.requestPart(.end(nil), now: at(1), draining: false)
        for index in 0..<PipelineQueue.readAheadRequests {
            #expect(!m.readAheadFull, "after \(index) queued")
            _ = m.requestPart(.head(head()), now: at(1), draining: false)
            _ = m.requestPart(.end(nil), now: at(1), draining: false)
        }
        #expect(m.readAheadFull && !m.queueOverflowed)
        #expect(PipelineQueue.maxQueuedRequests >= (64 << 10) / 18, "one 64 KiB read of the smallest requests fits under the hard bound")
        // Serving the first queued request makes room again.
        _ = m.upstream(.connected(fresh), now: at(1))
        _ = m.upstream(.head(ResponseHead(.ok, [("Content-Length", "0")])), now: at(1))
        _ = m.upstream(.end(nil), now: at(1))
        #expect(m.serveQueued(now: at(1), draining: false) == Machine.Action(.connectUpstream(route), then: .serveQueue))
        #expect(!m.readAheadFull)
    }

    @Test func pipelinedRequestsBeyondTheQueueGet503AfterTheQueuedOnes() {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        #expect(m.requestPart(.head(head()), now: at(1), draining: false) == .connectUpstream(route))
        _ = m.requestPart(.end(nil), now: at(1), draining: false)
        for _ in 0..<(PipelineQueue.maxQueuedRequests + 3) {
            _ = m.requestPart(.head(head()), now: at(1), draining: false)
            _ = m.requestPart(.end(nil), now: at(1), draining: false)
        }
        #expect(m.queueOverflowed)
        #expect(m.queuedParts == PipelineQueue.maxQueuedRequests * 2, "heads and ends of the queued requests only")
        #expect(m.serveQueued(now: at(1), draining: false) == .none, "not while earlier requests are in flight")

        // Serve the first request, then every queued one.
        var served = 1
        _ = m.upstream(.connected(fresh), now: at(1))
        _ = m.upstream(.head(ResponseHead(.ok, [("Content-Length", "0")])), now: at(1))
        _ = m.upstream(.end(nil), now: at(1))
        var action = m.serveQueued(now: at(1), draining: false)
        while action.then.contains(.serveQueue) {
            if case .connectUpstream = action.effect {
                served += 1
            } else if case .exchange = m.phase {
                // The request's end was served: its exchange completes.
                _ = m.upstream(.connected(fresh), now: at(1))
                _ = m.upstream(.head(ResponseHead(.ok, [("Content-Length", "0")])), now: at(1))
                _ = m.upstream(.end(nil), now: at(1))
            }
            action = m.serveQueued(now: at(1), draining: false)
        }
        #expect(served == 1 + PipelineQueue.maxQueuedRequests)
        guard case .respondWithError(let error, _, _) = action.effect else {
            Issue.record("expected 503 after the queued requests")
            return
        }
        #expect(error.status == .serviceUnavailable && error.asksToRetryLater)
        #expect(m.phase == .closing, "\(m.phase)")
    }

    @Test func queuedBodiesBeyondTheByteBoundDropTheirRequest() {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(head()), now: at(1), draining: false)
        _ = m.requestPart(.end(nil), now: at(1), draining: false)
        let post = head(.POST, "http://a.test/p", [("Content-Length", "\(PipelineQueue.maxQueuedBodyBytes + 1)")])
        _ = m.requestPart(.head(post), now: at(1), draining: false)
        let chunk = ByteBuffer(repeating: 0x61, count: 64 * 1024)
        for _ in 0..<(PipelineQueue.maxQueuedBodyBytes / chunk.readableBytes + 1) {
            _ = m.requestPart(.body(chunk), now: at(1), draining: false)
        }
        #expect(m.queueOverflowed)
        #expect(m.queuedParts == 0, "the POST whose body overflowed is dropped whole, head included")
    }
}
