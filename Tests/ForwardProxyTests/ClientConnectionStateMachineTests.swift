import HTTP1Codec
import NIOCore
import NIOHTTP1
import ProxyConfig
import Testing

@testable import ProxyKit
@testable import ProxyHTTP
@testable import ProxyAccess
@testable import ProxyUpstream
@testable import ForwardProxy

/// The client connection's decisions alone: every transition, with the exact actions.
@Suite struct ClientConnectionStateMachineTests {
    typealias Machine = ClientConnectionStateMachine

    private static let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)
    private let via = ViaHeader(pseudonym: "hp")

    private func machine(accessLog: Bool = false, _ configure: (inout ProxyConfiguration) -> Void = { _ in }) -> Machine {
        var configuration = ProxyConfiguration.defaults
        configuration.clientIdleTimeout = .seconds(60)
        configuration.headerTimeout = .seconds(30)
        configuration.upstreamTimeout = .seconds(10)
        configure(&configuration)
        return Machine(settings: .init(configuration: configuration, via: via, client: "127.0.0.1:5000", recordsEnabled: accessLog), now: Self.t0)
    }

    private func head(_ method: HTTPMethod = .GET, _ uri: String = "http://a.test/p", _ headers: [(String, String)] = [], version: HTTPVersion = .http1_1)
        -> RequestHead
    {
        RequestHead(method, uri, headers, version: version)
    }

    private func at(_ seconds: Int64) -> NIODeadline { Self.t0 + .seconds(seconds) }

    private var route: UpstreamRoute { UpstreamRoute(host: "a.test", port: 80, tls: nil) }

    /// The address the exchange's upstream connection was dialed to, reported when it closes.
    private let dialed = FailedAddress(address: try! SocketAddress(ipAddress: "192.0.2.1", port: 80), kind: .reset)

    private let fresh = UpstreamConnectInfo(pooled: false, dialedIP: "192.0.2.1", source: "httpdns", resolveMs: 1, connectMs: 2)

    private func response(_ status: HTTPResponseStatus, _ headers: [(String, String)] = [("Content-Length", "2")]) -> ResponseHead {
        ResponseHead(status, headers)
    }

    /// A GET through to an attached upstream with its request complete.
    private func getInFlight(_ m: inout Machine) {
        _ = m.activated(now: Self.t0, draining: false)
        #expect(m.requestPart(.head(head()), now: at(1), draining: false) == .connectUpstream(route))
        #expect(m.requestPart(.end(nil), now: at(1), draining: false) == .none)
        guard case .sendRequest(_, let buffered, _, _) = m.upstream(.connected(fresh), now: at(1)).effect else {
            Issue.record("expected sendRequest")
            return
        }
        #expect(buffered == [.end(nil)])
    }

    // MARK: idle, header and upstream timers

    @Test func activationSchedulesTheIdleDeadlineAndItClosesSilently() {
        var m = machine()
        #expect(m.activated(now: Self.t0, draining: false) == .scheduleTimer(at(60)))
        #expect(m.timerFired(now: at(59)) == .scheduleTimer(at(60)), "fired early (e.g. for an older deadline): re-armed")
        #expect(m.timerFired(now: at(60)) == .close(closeUpstream: false, log: nil))
        #expect(m.phase == .closed, "\(m.phase)")
    }

    @Test func firstBytesStartTheHeaderDeadlineWhichAnswers408() {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        #expect(m.requestBytesArrived(now: at(50)) == .none, "the idle timer (t+60) fires first and re-arms for the header deadline")
        #expect(m.timerFired(now: at(60)) == .scheduleTimer(at(80)))
        guard case .respondWithError(let error, let record, let closeUpstream) = m.timerFired(now: at(80)).effect else {
            Issue.record("expected 408")
            return
        }
        #expect(error.status == .requestTimeout)
        #expect(record.status == 408)
        #expect(!closeUpstream)
        #expect(!m.readAllowed)
    }

    @Test func headerDeadlineEarlierThanTheIdleOneIsScheduled() {
        var m = machine { $0.headerTimeout = .seconds(5) }
        _ = m.activated(now: Self.t0, draining: false)
        #expect(m.requestBytesArrived(now: at(1)) == .scheduleTimer(at(6)))
    }

    @Test func upstreamSilenceIs504AndActivityPostponesIt() {
        var m = machine()
        getInFlight(&m)
        // The timer was set for t+1+10 when the request went out; activity at t+5 moves the stamp only.
        #expect(m.upstream(.head(response(.ok)), now: at(5)) != .none)
        #expect(m.timerFired(now: at(11)) == .scheduleTimer(at(15)))
        _ = m.upstream(.body(ByteBuffer(string: "o")), now: at(14))
        #expect(m.timerFired(now: at(15)) == .scheduleTimer(at(24)))
        // Response started: no error response is possible, the connection is cut.
        guard case .close(closeUpstream: true, _) = m.timerFired(now: at(24)).effect else {
            Issue.record("expected an abrupt close")
            return
        }
    }

    @Test func noResponseWithinTheUpstreamTimeoutIs504() {
        var m = machine()
        getInFlight(&m)
        guard case .respondWithError(let error, _, closeUpstream: true) = m.timerFired(now: at(11)).effect else {
            Issue.record("expected 504")
            return
        }
        #expect(error.status == .gatewayTimeout)
        #expect(error.message.contains("did not answer within 10000"))
    }

    // MARK: one exchange

    @Test func aGetGoesThroughAndTheConnectionWaitsForTheNextRequest() {
        var m = machine()
        getInFlight(&m)
        let rewritten = try! MessageRewriter.rewriteResponse(
            response(.ok).converted, requestMethod: .GET, clientVersion: .http1_1, clientKeepAlive: true, isUpgradeResponse: false, via: via
        )
        #expect(m.upstream(.head(response(.ok)), now: at(2)) == .writeClient(.head(ResponseHead(rewritten.head)), timer: nil))
        #expect(m.upstream(.body(ByteBuffer(string: "ok")), now: at(2)) == .writeClient(.body(ByteBuffer(string: "ok")), timer: nil))
        #expect(
            m.upstream(.end(nil), now: at(3))
                == Machine.Action(.finishExchange(trailers: nil, upstream: .release, log: nil, then: .next(idleDeadline: at(63))), then: .serveQueue),
            "the exchange is over: the requests read ahead are served"
        )
        #expect(m.phase == .idle(.nextRequest(at(63))), "\(m.phase)")
        #expect(m.readAllowed)
    }

    @Test func theAccessLogRecordCarriesTheExchange() {
        var m = machine(accessLog: true)
        getInFlight(&m)
        _ = m.upstream(.head(response(.ok)), now: at(2))
        _ = m.upstream(.body(ByteBuffer(string: "ok")), now: at(2))
        guard case .finishExchange(_, _, let log?, _) = m.upstream(.end(nil), now: at(3)).effect else {
            Issue.record("expected a log record")
            return
        }
        #expect(log.host == "a.test")
        #expect(log.path == "/p")
        #expect(log.status == 200)
        #expect(log.bytesDown == 2)
        #expect(log.dialedIP == "192.0.2.1")
        #expect(log.source == "httpdns")
        #expect(log.totalMs == 2000)
        #expect(log.ttfbMs == 1000)
    }

    @Test func requestPartsWaitForTheUpstreamAndGoOutWithTheHead() throws {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(head(.POST, "http://a.test/p", [("Content-Length", "3")])), now: at(1), draining: false)
        #expect(m.requestPart(.body(ByteBuffer(string: "abc")), now: at(1), draining: false) == .none)
        #expect(!m.readAllowed, "one buffered part is enough until the upstream is there")
        guard case .sendRequest(let sent, let buffered, _, _) = m.upstream(.connected(fresh), now: at(1)).effect else {
            Issue.record("expected sendRequest")
            return
        }
        #expect(sent.uri == "/p")
        #expect(sent.headers["Content-Length"] == ["3"])
        #expect(buffered == [.body(ByteBuffer(string: "abc"))])
        #expect(m.readAllowed)
        #expect(m.requestPart(.end(nil), now: at(2), draining: false) == .writeUpstream(.end(nil), timer: nil))
    }

    @Test func aPooledConnectionIsLoggedAsReused() {
        var m = machine(accessLog: true)
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(head()), now: at(1), draining: false)
        _ = m.requestPart(.end(nil), now: at(1), draining: false)
        _ = m.upstream(.connected(UpstreamConnectInfo(pooled: true, dialedIP: "192.0.2.9")), now: at(1))
        _ = m.upstream(.head(response(.ok)), now: at(1))
        guard case .finishExchange(_, _, let log?, _) = m.upstream(.end(nil), now: at(1)).effect else { Issue.record("no log"); return }
        #expect(log.reused)
        #expect(log.source == "pool")
        #expect(log.dialedIP == "192.0.2.9")
    }

    @Test func connectFailureIsAnsweredWithItsError() {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(head()), now: at(1), draining: false)
        let error = ProxyError(.connectFailed, "cannot connect to a.test")
        guard case .respondWithError(error, let record, closeUpstream: true) = m.upstream(.connectFailed(error), now: at(2)).effect else {
            Issue.record("expected 502")
            return
        }
        #expect(record.status == 502)
        #expect(record.host == "a.test")
        // A dial or a second failure that comes afterwards is not for an exchange that wants one:
        // the dial's connection is not taken (the handler closes it), the failure changes nothing.
        #expect(m.upstream(.dialed, now: at(2)) == .none, "the exchange no longer wants an upstream")
        #expect(m.upstream(.connectFailed(error), now: at(2)) == .none)
        #expect(m.requestPart(.body(ByteBuffer(string: "x")), now: at(2), draining: false) == .none)
    }

    @Test func aStaleConnectIsNotWanted() {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(head()), now: at(1), draining: false)
        #expect(m.upstream(.dialed, now: at(1)) == .attachDialedUpstream, "the dial for the exchange is taken")
        _ = m.upstream(.connected(fresh), now: at(1))
        #expect(m.upstream(.dialed, now: at(1)) == .none, "attached already: a later dial is not taken")
    }

    // MARK: events that used to bypass the machine

    @Test func clientWritabilityGatesTheAttachedUpstreamsReads() {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        #expect(m.clientWritabilityChanged(false) == .none, "no exchange: nothing to gate")
        _ = m.requestPart(.head(head()), now: at(1), draining: false)
        #expect(m.clientWritabilityChanged(true) == .none, "still connecting: the attach takes the flag")
        _ = m.requestPart(.end(nil), now: at(1), draining: false)
        guard case .sendRequest(_, _, let upstreamReads, _) = m.upstream(.connected(fresh), now: at(1)).effect else {
            Issue.record("expected the request to go out")
            return
        }
        #expect(upstreamReads, "the client is writable: the attached upstream is read")
        #expect(m.clientWritabilityChanged(false) == .upstreamReads(allowed: false))
        #expect(m.clientWritabilityChanged(true) == .upstreamReads(allowed: true))

        var slow = machine()
        _ = slow.activated(now: Self.t0, draining: false)
        #expect(slow.clientWritabilityChanged(false) == .none)
        _ = slow.requestPart(.head(head()), now: at(1), draining: false)
        _ = slow.requestPart(.end(nil), now: at(1), draining: false)
        guard case .sendRequest(_, _, let slowReads, _) = slow.upstream(.connected(fresh), now: at(1)).effect else {
            Issue.record("expected the request to go out")
            return
        }
        #expect(!slowReads, "the client is not writable: the upstream is attached unread")
    }

    /// A reload reaches the machine at once and applies from the next request on: here to a
    /// pipelined request served from the queue (its head never leaves the machine).
    @Test func aReloadAppliesFromTheNextRequestAlsoWhenItIsQueued() {
        var m = machine()
        getInFlight(&m)
        var reloaded = m.settings.configuration
        reloaded.upstreamTimeout = .seconds(3)
        _ = m.reloaded(configuration: reloaded, authenticator: nil)
        #expect(m.settings.configuration.upstreamTimeout == .seconds(10), "not in the middle of an exchange")
        _ = m.requestPart(.head(head(.GET, "http://a.test/second")), now: at(1), draining: false)
        _ = m.requestPart(.end(nil), now: at(1), draining: false)
        _ = m.upstream(.head(response(.ok)), now: at(2))
        _ = m.upstream(.end(nil), now: at(2))
        #expect(m.serveQueued(now: at(2), draining: false) == Machine.Action(.connectUpstream(route), then: .serveQueue))
        #expect(m.settings.configuration.upstreamTimeout == .seconds(3), "the queued head started under the reload")
        #expect(m.serveQueued(now: at(2), draining: false) == Machine.Action(.none, then: .serveQueue), "its end")
        #expect(m.serveQueued(now: at(2), draining: false) == Machine.Action(.none, then: .releaseDecoder), "nothing more")
    }

    // MARK: pipelining

    @Test func pipelinedRequestsWaitAndAreServedInOrder() {
        var m = machine()
        getInFlight(&m)
        let second = head(.GET, "http://a.test/second")
        #expect(m.requestPart(.head(second), now: at(1), draining: false) == .none)
        #expect(m.requestPart(.end(nil), now: at(1), draining: false) == .none)
        #expect(!m.readAllowed, "no more reads while requests queue")
        #expect(m.serveQueued(now: at(1), draining: false) == Machine.Action(.none, then: .releaseDecoder), "the first exchange is not over")
        #expect(m.queuedParts == 2)
        _ = m.upstream(.head(response(.ok)), now: at(2))
        _ = m.upstream(.end(nil), now: at(2))
        #expect(m.serveQueued(now: at(2), draining: false) == Machine.Action(.connectUpstream(route), then: .serveQueue), "the second head")
        #expect(m.serveQueued(now: at(2), draining: false) == Machine.Action(.none, then: .serveQueue), "its end")
        #expect(m.serveQueued(now: at(2), draining: false) == Machine.Action(.none, then: .releaseDecoder), "nothing more")
        #expect(m.queuedParts == 0)
        guard case .sendRequest(let sent, _, _, _) = m.upstream(.connected(fresh), now: at(2)).effect else {
            Issue.record("expected the second request to go out")
            return
        }
        #expect(sent.uri == "/second")
        #expect(m.readAllowed, "request complete: the next pipelined request may be read (it queues)")
    }

    // MARK: retries

    @Test func aBodilessGetIsRetriedOnceThenFails() {
        var m = machine()
        getInFlight(&m)
        #expect(m.upstream(.closed(.closed, dialed: dialed), now: at(2)) == .retryUpstream(route, blamed: dialed))
        guard case .sendRequest(_, let buffered, _, _) = m.upstream(.connected(fresh), now: at(2)).effect else {
            Issue.record("expected the request again")
            return
        }
        #expect(buffered == [.end(nil)])
        guard case .upstreamFailed(dialed, then: .respondWithError(let error, _, true)) = m.upstream(.closed(.failed(reason: "reset"), dialed: dialed), now: at(3)).effect
        else {
            Issue.record("expected a 502 after the retry")
            return
        }
        #expect(error.status == .badGateway)
        #expect(error.message.contains("without answering (reset)"))
    }

    @Test func aPostWhoseConnectionClosedBeforeUseIsRetriedWithItsBody() {
        // Nothing was sent on a connection the origin closed before the exchange took it.
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(head(.POST, "http://a.test/p", [("Content-Length", "1")])), now: at(1), draining: false)
        _ = m.requestPart(.body(ByteBuffer(string: "x")), now: at(1), draining: false)
        _ = m.requestPart(.end(nil), now: at(1), draining: false)
        #expect(m.upstream(.closedBeforeUse(dialed: dialed), now: at(1)) == .retryUpstream(route, blamed: dialed))
        guard case .sendRequest(let sent, let buffered, _, _) = m.upstream(.connected(fresh), now: at(2)).effect else {
            Issue.record("expected the request on the new connection")
            return
        }
        #expect(sent.method == .POST)
        #expect(buffered == [.body(ByteBuffer(string: "x")), .end(nil)])
    }

    @Test func aSecondCloseBeforeUseIsA502ThatBlamesTheAddress() {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(head()), now: at(1), draining: false)
        #expect(m.upstream(.closedBeforeUse(dialed: nil), now: at(1)) == .retryUpstream(route, blamed: nil))
        guard case .upstreamFailed(dialed, then: .respondWithError(let error, _, _)) = m.upstream(.closedBeforeUse(dialed: dialed), now: at(2)).effect else {
            Issue.record("expected a 502 after the retry")
            return
        }
        #expect(error.status == .badGateway)
        #expect(error.message.contains("closed the connection as soon as it was made"))
    }

    @Test func aPooledConnectionClosedCleanlyIsNotTheAddressesFault() {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(head()), now: at(1), draining: false)
        _ = m.requestPart(.end(nil), now: at(1), draining: false)
        _ = m.upstream(.connected(UpstreamConnectInfo(pooled: true)), now: at(1))
        #expect(m.upstream(.closed(.closed, dialed: dialed), now: at(2)) == .retryUpstream(route, blamed: nil))
    }

    @Test func aPostIsNotRetried() {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(head(.POST, "http://a.test/p", [("Content-Length", "1")])), now: at(1), draining: false)
        _ = m.requestPart(.body(ByteBuffer(string: "x")), now: at(1), draining: false)
        _ = m.requestPart(.end(nil), now: at(1), draining: false)
        _ = m.upstream(.connected(fresh), now: at(1))
        guard case .upstreamFailed(dialed, then: .respondWithError(let error, _, _)) = m.upstream(.closed(.closed, dialed: dialed), now: at(2)).effect else {
            Issue.record("expected 502")
            return
        }
        #expect(error.status == .badGateway)
    }

    @Test func anInvalidResponseIs502WithoutRetryOrBlame() {
        // The reader's refusals, each with the text the client and the log get.
        let cases: [(HTTP1CodecError, String)] = [
            (.bytesAfterResponse, "a.test sent an invalid response: the origin sent bytes after the end of its response"),
            (HTTP1CodecError(.invalidResponse, "unsupported transfer coding 'gzip'", isUnrelayable: true),
             "the origin sent a response that cannot be relayed: unsupported transfer coding 'gzip'"),
            (.unaskedSwitch, "a.test switched protocols (101) without being asked to"),
        ]
        for (refusal, text) in cases {
            var m = machine()
            getInFlight(&m)
            let action = m.upstream(.closed(UpstreamCloseReason(refusal), dialed: dialed), now: at(2))
            guard case .respondWithError(let error, _, _) = action.effect else {
                Issue.record("expected 502 without retry or blame for \(refusal), got \(action.effect)")
                continue
            }
            #expect(error.shortDescription == "invalid_response")
            #expect(error.status == .badGateway)
            #expect(error.message == text)
        }
    }

    @Test func aCloseMidResponseCutsTheClient() {
        var m = machine()
        getInFlight(&m)
        _ = m.upstream(.head(response(.ok, [("Content-Length", "10")])), now: at(2))
        guard case .close(closeUpstream: true, _) = m.upstream(.closed(.closed, dialed: dialed), now: at(2)).effect else {
            Issue.record("expected an abrupt close")
            return
        }
    }

    // MARK: responses that end the connection

    @Test func anEarlyResponseDuringAnUploadClosesAfterIt() {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(head(.POST, "http://a.test/p", [("Content-Length", "10")])), now: at(1), draining: false)
        _ = m.upstream(.connected(fresh), now: at(1))
        _ = m.requestPart(.body(ByteBuffer(string: "12345")), now: at(1), draining: false)
        _ = m.upstream(.head(response(.payloadTooLarge, [("Content-Length", "0")])), now: at(2))
        #expect(m.upstream(.end(nil), now: at(2)) == .finishExchange(trailers: nil, upstream: .close, log: nil, then: .closeAfterLastWrite))
        #expect(m.requestPart(.body(ByteBuffer(string: "67890")), now: at(2), draining: false) == .none)
        #expect(!m.readAllowed)
    }

    @Test func connectionCloseFromTheClientEndsAfterTheResponse() {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(head(.GET, "http://a.test/p", [("Connection", "close")])), now: at(1), draining: false)
        _ = m.requestPart(.end(nil), now: at(1), draining: false)
        _ = m.upstream(.connected(fresh), now: at(1))
        _ = m.upstream(.head(response(.ok)), now: at(2))
        #expect(m.upstream(.end(nil), now: at(2)) == .finishExchange(trailers: nil, upstream: .release, log: nil, then: .closeAfterLastWrite))
    }

    @Test func anUpstreamThatWillCloseIsNotReleased() {
        var m = machine()
        getInFlight(&m)
        _ = m.upstream(.head(response(.ok, [("Content-Length", "2"), ("Connection", "close")])), now: at(2))
        guard case .finishExchange(_, .close, _, .next) = m.upstream(.end(nil), now: at(2)).effect else {
            Issue.record("expected the upstream closed, the client kept")
            return
        }
    }

    @Test func interimResponsesGoToHTTP11ClientsOnly() {
        var m = machine()
        getInFlight(&m)
        let interim = ResponseHead(.continue)
        #expect(m.upstream(.head(ResponseHead(.continue, [("Connection", "x")])), now: at(2)) == .writeClient(.head(interim), timer: nil))

        var old = machine()
        _ = old.activated(now: Self.t0, draining: false)
        _ = old.requestPart(.head(head(.GET, "http://a.test/p", version: .http1_0)), now: at(1), draining: false)
        _ = old.requestPart(.end(nil), now: at(1), draining: false)
        _ = old.upstream(.connected(fresh), now: at(1))
        #expect(old.upstream(.head(ResponseHead(.continue)), now: at(2)) == .none)
    }

    @Test func anUnrequested101Is502() {
        var m = machine()
        getInFlight(&m)
        guard case .respondWithError(let error, _, closeUpstream: true) = m.upstream(.head(response(.switchingProtocols, [])), now: at(2)).effect else {
            Issue.record("expected 502")
            return
        }
        #expect(error.shortDescription == "invalid_response")
    }

    @Test func responseTrailersAreFilteredForChunkedClients() {
        var m = machine()
        getInFlight(&m)
        _ = m.upstream(.head(response(.ok, [("Transfer-Encoding", "chunked")])), now: at(2))
        let trailers = HeaderFields([("X-Sum", "1"), ("Set-Cookie", "a=b")])
        #expect(
            m.upstream(.end(trailers), now: at(2))
                == Machine.Action(
                    .finishExchange(trailers: HeaderFields([("X-Sum", "1")]), upstream: .release, log: nil, then: .next(idleDeadline: at(62))),
                    then: .serveQueue
                )
        )
    }

    // MARK: upgrades and CONNECT

    @Test func anAcceptedUpgradeSwitchesAndKeepsTheBytesThatArriveMeanwhile() {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(head(.GET, "http://a.test/ws", [("Connection", "Upgrade"), ("Upgrade", "websocket")])), now: at(1), draining: false)
        _ = m.requestPart(.end(nil), now: at(1), draining: false)
        #expect(!m.readAllowed, "the decoder stopped parsing after the upgrade request")
        _ = m.upstream(.connected(fresh), now: at(1))
        guard case .beginTunnelSwitch(let out?) = m.upstream(.head(
            response(.switchingProtocols, [("Connection", "Upgrade"), ("Upgrade", "websocket")])), now: at(2)
        ).effect else {
            Issue.record("expected the switch")
            return
        }
        #expect(out.status == .switchingProtocols)
        #expect(out.headers["Upgrade"] == ["websocket"])
        #expect(m.phase == .tunnel)
        #expect(m.readAllowed, "what arrives now is held for the tunnel")
        _ = m.tunnel(.rawBytes(NIOAny(ByteBuffer(string: "HELLO"))), now: Self.t0)
        _ = m.tunnel(.rawBytes(NIOAny(ByteBuffer(string: "WORLD"))), now: Self.t0)
        guard case .installTunnel(let record, let started, let bytes, let sayEstablished, _) = m.tunnel(.handlersRemoved(succeeded: true), now: at(3)).effect else {
            Issue.record("expected the glue to be installed")
            return
        }
        #expect(record.kind == .tunnel)
        #expect(record.status == 101)
        #expect(started == at(1))
        #expect(bytes.parts.count == 2, "the bytes that arrived during the switch go to the tunnel")
        #expect(!sayEstablished, "the origin's 101 went out already")
        #expect(m.tunnel(.handlersRemoved(succeeded: true), now: at(3)) == .none, "a second completion changes nothing")
        _ = m.tunnel(.installed, now: Self.t0)
        #expect(m.requestPart(.end(nil), now: at(3), draining: false) == .none)
        #expect(m.clientClosed(now: at(4)) == .none, "the tunnel's recorder logs it from now on")
    }

    @Test func aSwitchThatFailsClosesBothSidesAndLogsTheAttempt() {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(head(.CONNECT, "a.test:443")), now: at(1), draining: false)
        #expect(m.tunnel(.connected(fresh), now: Self.t0) == .beginTunnelSwitch(upgradeHead: nil))
        guard case .close(true, let log?) = m.tunnel(.handlersRemoved(succeeded: false), now: at(5)).effect else {
            Issue.record("expected a close of both sides")
            return
        }
        #expect(log.kind == .tunnel)
        #expect(log.errorReason == "upstream_closed")
        #expect(log.totalMs == 4000)
        #expect(m.clientClosed(now: at(6)) == .none, "logged once")
    }

    @Test func aClientThatLeavesDuringTheSwitchIsLoggedOnce() {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(head(.CONNECT, "a.test:443")), now: at(1), draining: false)
        _ = m.tunnel(.connected(fresh), now: Self.t0)
        _ = m.tunnel(.rawBytes(NIOAny(ByteBuffer(string: "early"))), now: Self.t0)
        guard case .close(true, let log?) = m.clientClosed(now: at(2)).effect else {
            Issue.record("expected the tunnel's upstream side to close")
            return
        }
        #expect(log.errorReason == "client_closed")
        #expect(log.status == 200)
        #expect(m.tunnel(.handlersRemoved(succeeded: true), now: at(3)) == .none, "the removal that completes later installs nothing")
    }

    @Test func aClientErrorDuringTheSwitchClosesTheUpstreamSideAndIsLogged() {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(head(.CONNECT, "a.test:443")), now: at(1), draining: false)
        let dialing = m.clientError(now: at(2))
        guard case .close(true, let log?) = dialing.effect else {
            Issue.record("expected the dial's channel to be closed and the CONNECT logged: \(dialing)")
            return
        }
        #expect(log.errorReason == "client_error")

        var s = machine()
        _ = s.activated(now: Self.t0, draining: false)
        _ = s.requestPart(.head(head(.CONNECT, "a.test:443")), now: at(1), draining: false)
        _ = s.tunnel(.connected(fresh), now: Self.t0)
        let switching = s.clientError(now: at(2))
        guard case .close(true, let record?) = switching.effect else {
            Issue.record("expected the tunnel's upstream side to close: \(switching)")
            return
        }
        #expect(record.errorReason == "client_error")
        #expect(s.clientClosed(now: at(3)) == .none, "logged once")
    }

    @Test func aClientThatLeavesDuringTheInstallLeavesTheRecordToTheTunnel() {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(head(.CONNECT, "a.test:443")), now: at(1), draining: false)
        _ = m.tunnel(.connected(fresh), now: Self.t0)
        _ = m.tunnel(.handlersRemoved(succeeded: true), now: at(2))
        // A write of the install fails synchronously and the client's close arrives inside it.
        #expect(m.clientClosed(now: at(2)) == .close(closeUpstream: true, log: nil), "the recorder logs it")
        _ = m.tunnel(.installed, now: Self.t0)
        #expect(m.tunnel(.installFailed, now: at(2)) == .none)
    }

    @Test func aClientThatLeavesWhileTheTargetIsDialedIsLogged() {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(head(.CONNECT, "a.test:443")), now: at(1), draining: false)
        guard case .close(true, let log?) = m.clientClosed(now: at(3)).effect else {
            Issue.record("expected a close with a record")
            return
        }
        #expect(log.kind == .tunnel)
        #expect(log.errorReason == "client_closed")
        #expect(log.totalMs == 2000)
        #expect(m.tunnel(.connected(fresh), now: at(4)) == .none, "a dial that completes later is not taken (the handler closes it)")
    }

    @Test func aRefusedUpgradeClosesAfterTheResponse() {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(head(.GET, "http://a.test/ws", [("Connection", "Upgrade"), ("Upgrade", "websocket")])), now: at(1), draining: false)
        _ = m.requestPart(.end(nil), now: at(1), draining: false)
        _ = m.upstream(.connected(fresh), now: at(1))
        guard case .writeClient(.head(let sent), _) = m.upstream(.head(response(.ok)), now: at(2)).effect else {
            Issue.record("expected the response head")
            return
        }
        #expect(sent.headers["Connection"] == ["close"], "the client is told the connection closes")
        guard case .finishExchange(_, _, _, .closeAfterLastWrite) = m.upstream(.end(nil), now: at(2)).effect else {
            Issue.record("expected a close after the response")
            return
        }
    }

    @Test func connectToAnAllowedPortDialsThenSwitches() throws {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        let target = try RequestTarget.parseConnectAuthority("a.test:443")
        #expect(m.requestPart(.head(head(.CONNECT, "a.test:443")), now: at(1), draining: false) == .connectTunnel(target))
        #expect(!m.readAllowed)
        #expect(m.phase == .tunnel)
        #expect(m.tunnel(.connected(fresh), now: Self.t0) == .beginTunnelSwitch(upgradeHead: nil))
        guard case .installTunnel(let record, let started, let bytes, true, _) = m.tunnel(.handlersRemoved(succeeded: true), now: at(2)).effect else {
            Issue.record("expected the glue, after the proxy's own 200")
            return
        }
        #expect(bytes.parts.isEmpty)
        #expect(record.status == 200)
        #expect(record.kind == .tunnel)
        #expect(record.dialedIP == "192.0.2.1")
        #expect(started == at(1))
        #expect(m.tunnel(.connected(fresh), now: at(2)) == .none, "a second dial result is not taken")
    }

    @Test func theTunnelIdleTimeoutComesFromTheSettingsOfItsRequest() {
        var m = machine { $0.tunnelIdleTimeout = .seconds(7) }
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.reloaded(configuration: { var c = m.settings.configuration; c.tunnelIdleTimeout = .seconds(9); return c }(), authenticator: nil)
        _ = m.requestPart(.head(head(.CONNECT, "a.test:443")), now: at(1), draining: false)
        _ = m.tunnel(.connected(fresh), now: at(1))
        guard case .installTunnel(_, _, _, _, let idleTimeout) = m.tunnel(.handlersRemoved(succeeded: true), now: at(2)).effect else {
            Issue.record("expected the glue")
            return
        }
        #expect(idleTimeout == .seconds(9), "the reload applied when the CONNECT started")
    }

    @Test func errorAnswersCarryTheRequestID() {
        var m = machine(accessLog: true) { $0.requestIDHeader = "X-Request-ID" }
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(head(.GET, "http://a.test/p", [("X-Request-ID", "abc-123")])), now: at(1), draining: false)
        _ = m.requestPart(.end(nil), now: at(1), draining: false)
        _ = m.upstream(.connected(fresh), now: at(1))
        guard case .respondWithError(let answer, let record, true) = m.timerFired(now: at(11)).effect else {
            Issue.record("expected 504")
            return
        }
        #expect(record.requestID == "abc-123")
        #expect(answer.head.headers["X-Request-ID"] == ["abc-123"], "the id the request was logged and forwarded with")
        #expect(answer.head.headers["Connection"] == ["close"])
        #expect(answer.head.headers["X-Proxy-Error"] == ["upstream_timeout"])
    }

    @Test func connectToAnotherPortIs403() {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        guard case .respondWithError(let error, let record, false) = m.requestPart(.head(head(.CONNECT, "a.test:25")), now: at(1), draining: false).effect else {
            Issue.record("expected 403")
            return
        }
        #expect(error.status == .forbidden)
        #expect(record.host == "a.test")
        #expect(record.port == 25)
    }

    @Test func aFailedTunnelDialIsAnswered() {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(head(.CONNECT, "a.test:443")), now: at(1), draining: false)
        guard case .respondWithError(_, let record, false) = m.tunnel(.connectFailed(ProxyError(.connectFailed, "no")), now: at(2)).effect else {
            Issue.record("expected 502")
            return
        }
        #expect(record.status == 502)
        #expect(record.error == "no")
    }

    // MARK: requests answered without an upstream

    @Test func aRejectedRequestKeepsItsTargetInTheLog() {
        var m = machine(accessLog: true)
        _ = m.activated(now: Self.t0, draining: false)
        guard case .respondWithError(let error, let record, _) = m.requestPart(.head(head(.GET, "ftp://files.test:2121/x?secret")), now: at(1), draining: false).effect
        else {
            Issue.record("expected 501")
            return
        }
        #expect(error.status == .notImplemented)
        #expect(record.host == "files.test")
        #expect(record.port == 2121)
        #expect(record.path == "/x")
    }

    @Test func maxForwardsZeroIsAnsweredLocally() {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        guard case .respondLocally(let answer, let record) = m.requestPart(.head(head(.OPTIONS, "http://a.test/", [("Max-Forwards", "0")])), now: at(1), draining: false).effect
        else {
            Issue.record("expected a local answer")
            return
        }
        #expect(answer.head.status == .ok)
        #expect(record.status == 200)
    }

    @Test func wsAndWssAreUpgradesToTheirHTTPOrigins() {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        #expect(
            m.requestPart(.head(head(.GET, "ws://a.test/chat", [("Connection", "Upgrade"), ("Upgrade", "websocket")])), now: at(1), draining: false)
                == .connectUpstream(route)
        )
        var secure = machine()
        _ = secure.activated(now: Self.t0, draining: false)
        guard case .connectUpstream(let tlsRoute) = secure.requestPart(.head(head(.GET, "wss://a.test/chat")), now: at(1), draining: false).effect else {
            Issue.record("expected a connect")
            return
        }
        #expect(tlsRoute.port == 443)
        #expect(tlsRoute.tls != nil)
    }

    // MARK: errors, quiescing, closing

    @Test func aParseErrorBeforeAnyHeadIs400AndNothingMoreIsAnswered() {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        guard case .respondWithError(let error, _, false) = m.parseError(.malformed("invalid method"), now: at(1)).effect else {
            Issue.record("expected 400")
            return
        }
        #expect(error.status == .badRequest)
        #expect(m.parseError(.malformed("the request could not be parsed (stream ended at an unexpected time)"), now: at(1)) == .none)
        #expect(m.requestPart(.head(head()), now: at(1), draining: false) == .none)
    }

    @Test func aParseErrorMidResponseClosesWithoutASecondAnswer() {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(head(.POST, "http://a.test/p", [("Transfer-Encoding", "chunked")])), now: at(1), draining: false)
        _ = m.upstream(.connected(fresh), now: at(1))
        _ = m.upstream(.head(response(.ok)), now: at(2))
        guard case .close(closeUpstream: true, _) = m.parseError(.malformed("invalid chunk size in the chunked body"), now: at(2)).effect else {
            Issue.record("expected an abrupt close")
            return
        }
    }

    @Test func quiesceClosesAnIdleConnectionAndFinishesABusyOne() {
        var idle = machine()
        _ = idle.activated(now: Self.t0, draining: false)
        #expect(idle.quiesce() == .closeAfterLastWrite)

        var busy = machine()
        getInFlight(&busy)
        #expect(busy.quiesce() == .none)
        _ = busy.upstream(.head(response(.ok)), now: at(2))
        guard case .finishExchange(_, .release, _, .closeAfterLastWrite) = busy.upstream(.end(nil), now: at(2)).effect else {
            Issue.record("expected a close after the response")
            return
        }
    }

    @Test func aConnectionAcceptedWhileDrainingIsQuiescedAtOnce() {
        var m = machine()
        #expect(m.activated(now: Self.t0, draining: true) == .closeAfterLastWrite)
    }

    @Test func drainingAtTheRequestServesItThenCloses() {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(head()), now: at(1), draining: true)
        #expect(m.closeAfterExchange)
    }

    @Test func theClientLeavingMidExchangeIsLogged() {
        var m = machine(accessLog: true)
        getInFlight(&m)
        guard case .close(closeUpstream: true, let log?) = m.clientClosed(now: at(2)).effect else {
            Issue.record("expected the record")
            return
        }
        #expect(log.error == "client closed the connection")
        #expect(m.clientClosed(now: at(2)) == .none)
    }

    // MARK: backpressure

    @Test func readsWaitForAWritableUpstream() {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(head(.POST, "http://a.test/p", [("Content-Length", "10")])), now: at(1), draining: false)
        _ = m.upstream(.connected(fresh), now: at(1))
        #expect(m.readRequested() == Machine.Action(.none, then: .read), "allowed: read now")
        #expect(m.upstream(.writabilityChanged(false), now: at(1)) == .none)
        #expect(m.readRequested() == .none, "not allowed: remembered")
        #expect(m.clientWritabilityChanged(true) == .upstreamReads(allowed: true), "an event that does not allow it keeps it waiting")
        #expect(m.upstream(.writabilityChanged(true), now: at(1)) == Machine.Action(.none, then: .read), "the remembered read goes ahead")
        #expect(m.upstream(.writabilityChanged(true), now: at(1)) == .none, "one pending read, taken once")
    }

    // MARK: transitions that only end-to-end tests drove before (found by a coverage run of these suites)

    @Test func aClientErrorMidExchangeIsLoggedAndClosesTheUpstream() {
        var m = machine(accessLog: true)
        getInFlight(&m)
        guard case .close(closeUpstream: true, let log?) = m.clientError(now: at(3)).effect else {
            Issue.record("expected both sides closed and the exchange logged")
            return
        }
        #expect(log.errorReason == "client_error")
        #expect(log.totalMs == 2000)
        #expect(m.clientError(now: at(4)) == .none, "logged once")
        #expect(m.clientClosed(now: at(4)) == .none)
    }

    @Test func aClientErrorBetweenRequestsClosesWithoutALog() {
        var m = machine(accessLog: true)
        _ = m.activated(now: Self.t0, draining: false)
        #expect(m.clientError(now: at(1)) == .close(closeUpstream: false, log: nil))
        #expect(m.phase == .closed, "\(m.phase)")
    }

    @Test func aFailedGlueInstallClosesBothSidesAndLogsTheTunnel() {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(head(.CONNECT, "a.test:443")), now: at(1), draining: false)
        _ = m.tunnel(.connected(fresh), now: Self.t0)
        guard case .installTunnel = m.tunnel(.handlersRemoved(succeeded: true), now: at(2)).effect else {
            Issue.record("expected the install")
            return
        }
        guard case .close(closeUpstream: true, let log?) = m.tunnel(.installFailed, now: at(4)).effect else {
            Issue.record("expected both sides closed")
            return
        }
        #expect(log.kind == .tunnel)
        #expect(log.errorReason == "upstream_closed")
        #expect(log.totalMs == 3000)
        #expect(m.clientClosed(now: at(5)) == .none, "logged once")
    }

    @Test func theTimerIsIgnoredWhileATunnelIsDialed() {
        var m = machine()
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(head(.CONNECT, "a.test:443")), now: at(1), draining: false)
        #expect(m.timerFired(now: at(100)) == .none, "the connector's own timeout ends the dial")
        #expect(m.tunnel(.connected(fresh), now: at(100)) == .beginTunnelSwitch(upgradeHead: nil), "the dial is still wanted")
    }

    @Test func aPartArrivingWhileQueuedRequestsWaitGoesBehindThem() {
        var m = machine()
        getInFlight(&m)
        #expect(m.requestPart(.head(head(.GET, "http://a.test/q")), now: at(2), draining: false) == .none, "pipelined: queued")
        _ = m.upstream(.head(response(.ok)), now: at(2))
        guard case .finishExchange(_, .release, _, .next) = m.upstream(.end(nil), now: at(2)).effect else {
            Issue.record("expected the exchange to end and the next request to be served")
            return
        }
        // The handler has not served the queue yet when the pipelined request's end arrives.
        #expect(m.requestPart(.end(nil), now: at(2), draining: false) == .none)
        #expect(m.serveQueued(now: at(2), draining: false) == Machine.Action(.connectUpstream(route), then: .serveQueue))
        #expect(m.serveQueued(now: at(2), draining: false) == Machine.Action(.none, then: .serveQueue), "then its end, in order")
        #expect(m.serveQueued(now: at(2), draining: false) == Machine.Action(.none, then: .releaseDecoder), "nothing more")
        guard case .sendRequest(let sent, let buffered, _, _) = m.upstream(.connected(fresh), now: at(2)).effect else {
            Issue.record("expected the pipelined request to go out")
            return
        }
        #expect(sent.uri == "/q")
        #expect(buffered == [.end(nil)])
    }

    @Test func aRefusedRequestFinishedDuringADrainCloses() {
        var configuration = ProxyConfiguration.defaults
        configuration.clientIdleTimeout = .seconds(60)
        var m = Machine(
            settings: .init(configuration: configuration, via: via, client: "127.0.0.1:5000", recordsEnabled: true, authenticator: .forTests),
            now: Self.t0
        )
        _ = m.activated(now: Self.t0, draining: false)
        guard case .refuseCredentials(_, _, keepAlive: true) = m.requestPart(.head(head()), now: at(1), draining: false).effect else {
            Issue.record("expected a 407 that keeps the connection")
            return
        }
        #expect(m.readAllowed, "the rest of the refused request is read (and dropped)")
        #expect(m.currentRecord == nil)
        #expect(m.quiesce() == .none, "the refused request's end is still to come")
        #expect(m.requestPart(.end(nil), now: at(1), draining: false) == .closeAfterLastWrite)
        #expect(m.phase == .closing, "\(m.phase)")
    }

    @Test func anOverlongTargetIs414BeforeAnyDial() {
        var m = machine(accessLog: true)
        _ = m.activated(now: Self.t0, draining: false)
        let uri = "http://a.test/" + String(repeating: "a", count: MessageFraming.maxRequestTargetLength)
        guard case .respondWithError(let error, let record, closeUpstream: false) = m.requestPart(.head(head(.GET, uri)), now: at(1), draining: false).effect
        else {
            Issue.record("expected 414")
            return
        }
        #expect(error.status == .uriTooLong)
        #expect(error.message.contains("\(uri.utf8.count) bytes long"))
        #expect(record.status == 414)
    }

    @Test func aRequestThatAlreadyPassedThisProxyIs508ForGETAndCONNECT() {
        for (method, uri) in [(HTTPMethod.GET, "http://a.test/p"), (.CONNECT, "a.test:443")] {
            var m = machine(accessLog: true)
            _ = m.activated(now: Self.t0, draining: false)
            let looped = head(method, uri, [("Via", "1.1 other, 1.1 HP")])
            guard case .respondWithError(let error, let record, _) = m.requestPart(.head(looped), now: at(1), draining: false).effect else {
                Issue.record("expected 508 for \(method)")
                continue
            }
            #expect(error.status == .loopDetected)
            #expect(error.message.contains("1.1 other, 1.1 HP"))
            #expect(record.status == 508)
        }
    }

    @Test func theUserAgentIsCutForTheRecordAndAValidClientRequestIDTravels() {
        var m = machine(accessLog: true) { $0.requestIDHeader = "X-Request-ID" }
        _ = m.activated(now: Self.t0, draining: false)
        // 3-byte characters: the limit (256) falls inside the 86th, which is left out whole.
        let agent = String(repeating: "€", count: AccessLogRecord.userAgentLimit)
        let request = head(.GET, "http://a.test/p", [("User-Agent", agent), ("X-Request-ID", "abc-123")])
        #expect(m.requestPart(.head(request), now: at(1), draining: false) == .connectUpstream(route))
        let userAgent = m.currentRecord?.userAgent ?? ""
        #expect(userAgent == String(repeating: "€", count: 85), "cut between characters, never inside one")
        #expect(userAgent.utf8.count <= AccessLogRecord.userAgentLimit)
        #expect(m.currentRecord?.requestID == "abc-123")
        _ = m.requestPart(.end(nil), now: at(1), draining: false)
        guard case .sendRequest(let sent, _, _, _) = m.upstream(.connected(fresh), now: at(1)).effect else {
            Issue.record("expected the request to go out")
            return
        }
        #expect(sent.headers["X-Request-ID"] == ["abc-123"])
    }

    // MARK: relayed heads, byte for byte

    /// What the client gets of an origin's head, as bytes: the origin's kept lines as they
    /// arrived (spacing, reason phrase), then the proxy's fields.
    private func relayed(
        _ originHead: String,
        request: RequestHead,
        configure: (inout ProxyConfiguration) -> Void = { _ in }
    ) -> String? {
        var m = machine(accessLog: true, configure)
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(request), now: at(1), draining: false)
        _ = m.requestPart(.end(nil), now: at(1), draining: false)
        _ = m.upstream(.connected(fresh), now: at(1))
        var decoder = MessageDecoder(role: .response)
        decoder.expectResponse(ResponseContext(method: request.method == .HEAD ? .head : .get))
        var buffer = ByteBuffer(string: originHead)
        guard case .head(let parsed) = try? decoder.next(&buffer) else { return nil }
        guard case .writeClient(.head(let head), _) = m.upstream(.head(ResponseHead(origin: parsed)), now: at(2)).effect else { return nil }
        return head.wire
    }

    @Test func anOriginsLinesTravelAsTheyArrivedWithTheProxysFieldsAfterThem() {
        let origin = "HTTP/1.1 203 Quite Fine\r\nX-A:a  \r\nConnection: close, X-Hop\r\nX-Hop: 1\r\nContent-Length: 2\r\nKeep-Alive: 5\r\n\r\n"
        #expect(relayed(origin, request: head()) == "HTTP/1.1 203 Quite Fine\r\nX-A:a  \r\nContent-Length: 2\r\nVia: 1.1 hp\r\n\r\n")
        let chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-B: b\r\n\r\n"
        #expect(relayed(chunked, request: head()) == "HTTP/1.1 200 OK\r\nX-B: b\r\nTransfer-Encoding: chunked\r\nVia: 1.1 hp\r\n\r\n")
        #expect(
            relayed(chunked, request: head(version: .http1_0)) == "HTTP/1.0 200 OK\r\nX-B: b\r\nConnection: close\r\nVia: 1.1 hp\r\n\r\n",
            "an HTTP/1.0 client gets the body until the close"
        )
        #expect(
            relayed("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", request: head(.GET, "http://a.test/p", [("Connection", "keep-alive")], version: .http1_0))
                == "HTTP/1.0 200 OK\r\nContent-Length: 0\r\nConnection: keep-alive\r\nVia: 1.0 hp\r\n\r\n",
            "a kept-alive HTTP/1.0 client is told so; Via names the origin's version"
        )
        #expect(
            relayed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: t\r\n\r\n", request: head(.HEAD, "http://a.test/p"))
                == "HTTP/1.1 200 OK\r\nContent-Type: t\r\nVia: 1.1 hp\r\n\r\n",
            "a HEAD answer has no body: no coding of the proxy's"
        )
    }

    /// `Proxy-Connection` (RFC 9112 Appendix C.2.2: not standard, but sent by HTTP/1.0 clients of
    /// proxies) counts for the client's persistence as `Connection` does, as the reader reads it:
    /// the reader stops after a request it closes, so the machine must close too.
    @Test func proxyConnectionDecidesTheClientsPersistence() {
        let origin = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
        #expect(
            relayed(origin, request: head(.GET, "http://a.test/p", [("Proxy-Connection", "keep-alive")], version: .http1_0))
                == "HTTP/1.0 200 OK\r\nContent-Length: 0\r\nConnection: keep-alive\r\nVia: 1.1 hp\r\n\r\n"
        )
        #expect(
            relayed(origin, request: head(.GET, "http://a.test/p", [("Proxy-Connection", "close")]))
                == "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\nVia: 1.1 hp\r\n\r\n"
        )
    }

    @Test func theRequestIDReplacesTheOriginsField() {
        let request = head(.GET, "http://a.test/p", [("X-Request-ID", "abc-123")])
        let origin = "HTTP/1.1 200 OK\r\nx-request-id: origin-1\r\nContent-Length: 0\r\nX-Request-Id: origin-2\r\n\r\n"
        #expect(
            relayed(origin, request: request) { $0.requestIDHeader = "X-Request-ID" }
                == "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nVia: 1.1 hp\r\nX-Request-ID: abc-123\r\n\r\n"
        )
        #expect(
            relayed(origin, request: request)
                == "HTTP/1.1 200 OK\r\nx-request-id: origin-1\r\nContent-Length: 0\r\nX-Request-Id: origin-2\r\nVia: 1.1 hp\r\n\r\n",
            "no option: the origin's own"
        )
    }

    // MARK: outgoing request heads, byte for byte

    /// The request head the origin gets for a client's head (its bytes), as bytes.
    private func outgoing(_ clientHead: String, configure: (inout ProxyConfiguration) -> Void = { _ in }) -> String? {
        var decoder = MessageDecoder(role: .request)
        var buffer = ByteBuffer(string: clientHead)
        guard case .head(let parsed) = try? decoder.next(&buffer) else { return nil }
        var m = machine(accessLog: true, configure)
        _ = m.activated(now: Self.t0, draining: false)
        _ = m.requestPart(.head(RequestHead(parsed: parsed)), now: at(1), draining: false)
        guard case .sendRequest(let sent, _, _, _) = m.upstream(.connected(fresh), now: at(1)).effect,
            case .outgoing(let head) = sent.storage
        else { return nil }
        var writer = HeadWriter()
        return String(buffer: head.written(by: &writer, allocator: ByteBufferAllocator()))
    }

    @Test func aClientsLinesTravelAsTheyArrivedWithTheProxysFieldsAfterThem() {
        #expect(
            outgoing("GET http://a.test/p?q HTTP/1.1\r\nhost: elsewhere\r\nX-A:a  \r\nConnection: x-hop\r\nX-Hop: 1\r\nAccept: */*\r\n\r\n")
                == "GET /p?q HTTP/1.1\r\nX-A:a  \r\nAccept: */*\r\nHost: a.test\r\nVia: 1.1 hp\r\n\r\n",
            "Host names the target; hop-by-hop fields and those Connection names stay behind"
        )
        #expect(
            outgoing("POST http://a.test/ HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
                == "POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 0\r\nVia: 1.1 hp\r\n\r\n",
            "an empty body's length still travels"
        )
        #expect(
            outgoing("POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTE: trailers\r\nX-B: b\r\n\r\n")
                == "POST / HTTP/1.1\r\nX-B: b\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\nTE: trailers\r\nVia: 1.1 hp\r\n\r\n"
        )
        #expect(
            outgoing("PUT http://a.test/ HTTP/1.0\r\nContent-Length: 007\r\n\r\n")
                == "PUT / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 7\r\nVia: 1.0 hp\r\n\r\n",
            "the length canonical; Via names the client's version"
        )
        #expect(
            outgoing("OPTIONS http://a.test/ HTTP/1.1\r\nMax-Forwards: 3\r\nX-C: c\r\n\r\n")
                == "OPTIONS / HTTP/1.1\r\nX-C: c\r\nHost: a.test\r\nMax-Forwards: 2\r\nVia: 1.1 hp\r\n\r\n"
        )
        #expect(
            outgoing("GET http://a.test/ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: k\r\n\r\n")
                == "GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nSec-WebSocket-Key: k\r\nHost: a.test\r\nConnection: upgrade\r\nVia: 1.1 hp\r\n\r\n"
        )
    }

    @Test func theRequestIDIsTheProxysFieldAfterVia() {
        #expect(
            outgoing("GET http://a.test/ HTTP/1.1\r\nx-request-id: abc-1\r\nX-D: d\r\n\r\n") { $0.requestIDHeader = "X-Request-ID" }
                == "GET / HTTP/1.1\r\nX-D: d\r\nHost: a.test\r\nVia: 1.1 hp\r\nX-Request-ID: abc-1\r\n\r\n",
            "the client's valid id, written once as the proxy's field"
        )
        #expect(
            outgoing("GET http://a.test/ HTTP/1.1\r\nx-request-id: abc-1\r\n\r\n")
                == "GET / HTTP/1.1\r\nx-request-id: abc-1\r\nHost: a.test\r\nVia: 1.1 hp\r\n\r\n",
            "without the option the field is the client's like any other"
        )
    }

    @Test func aParentGetsTheAbsoluteFormAndItsCredentials() throws {
        var decoder = MessageDecoder(role: .request)
        var buffer = ByteBuffer(string: "GET http://a.test/p HTTP/1.1\r\nProxy-Authorization: Basic Y2xpZW50\r\nX-E: e\r\n\r\n")
        guard case .head(let parsed) = try decoder.next(&buffer) else {
            Issue.record("no head")
            return
        }
        let origin = try RequestHead(parsed: parsed).forOrigin(target: RequestTarget.parseAbsolute("http://a.test/p"), via: via, requestID: nil)
        let parent = origin.head.forParent(ParentForward(authority: "127.0.0.9:80", authorization: "Basic cGFyZW50"), pathAndQuery: "/p")
        guard case .outgoing(let head) = parent.storage else {
            Issue.record("not an outgoing head")
            return
        }
        var writer = HeadWriter()
        #expect(
            String(buffer: head.written(by: &writer, allocator: ByteBufferAllocator()))
                == "GET http://127.0.0.9:80/p HTTP/1.1\r\nX-E: e\r\nHost: a.test\r\nVia: 1.1 hp\r\nProxy-Authorization: Basic cGFyZW50\r\n\r\n",
            "the client's credentials never travel; the parent's do"
        )
    }
}
