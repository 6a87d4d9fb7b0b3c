import Foundation
import HTTPDNS
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// An in-process HTTPDNS service on a loopback address and port 0 that speaks every provider's
/// format: Alibaba v1 (`/{account}/d`, `sign_d`, `resolve`, `sign_resolve`), DoH JSON (`/resolve`),
/// RFC 8484 (`/dns-query`, GET and POST) and a static list (`/static.json`). Tests set its records
/// and its behaviour (fail, stall, garbage) and read what it was asked.
public final class FakeHTTPDNSService: TestServer {
    public struct Record: Sendable {
        public var ipv4: [String]
        public var ipv6: [String]
        public var ttl: Int

        public init(ipv4: [String] = [], ipv6: [String] = [], ttl: Int = 60) {
            self.ipv4 = ipv4
            self.ipv6 = ipv6
            self.ttl = ttl
        }
    }

    public enum Behaviour: Sendable {
        case normal
        /// Answer every request with this status and body.
        case fail(status: Int, body: String)
        /// Accept the request and never answer.
        case stall
        /// Answer 200 with bytes no parser accepts.
        case garbage
    }

    public struct SeenRequest: Sendable {
        public var method: String
        public var uri: String
        public var path: String
        public var query: [String: String]
        public var headers: [(String, String)]
        public var body: [UInt8]
    }

    fileprivate struct State {
        var records: [String: Record] = [:]
        var cnames: [String: String] = [:]
        var nxdomain: Set<String> = []
        var behaviour: Behaviour = .normal
        var requests: [SeenRequest] = []
        var staticList: String?
        var secret: String?
        var dohSignatureSecret: String?
        var connections = 0
        var now: Int = Int(Date().timeIntervalSince1970)
    }

    private let state: NIOLockedValueBox<State>
    private let channel: any Channel
    public let host: String
    public let port: Int

    private init(host: String, port: Int, channel: any Channel, state: NIOLockedValueBox<State>) {
        self.host = host
        self.port = port
        self.channel = channel
        self.state = state
    }

    /// Starts the service on `host` (a loopback address) and `port` (0: any free port; a second
    /// service on another loopback address can share the first one's port, for failover tests).
    public static func start(host: String = "127.0.0.1", port: Int = 0) async throws -> FakeHTTPDNSService {
        let box = NIOLockedValueBox(State())
        let (channel, bound) = try await FakeHTTPServer.start(
            host: host, port: port,
            onConnection: { box.withLockedValue { state in state.connections += 1 } },
            respond: { FakeHTTPDNSService.respond(to: $0, state: box) }
        )
        return FakeHTTPDNSService(host: host, port: bound, channel: channel, state: box)
    }

    deinit {
        channel.close(promise: nil)
    }

    package var listeners: [any Channel] { [channel] }

    /// `http://HOST:PORT` (IPv6 bracketed).
    public var baseURL: String {
        "http://" + LoopbackListener.authority(host: host, port: port)
    }

    public func set(_ name: String, _ record: Record) {
        state.withLockedValue { $0.records[name.lowercased()] = record }
    }

    public func setCNAME(_ name: String, to target: String) {
        state.withLockedValue { $0.cnames[name.lowercased()] = target.lowercased() }
    }

    public func setNXDOMAIN(_ name: String) {
        _ = state.withLockedValue { $0.nxdomain.insert(name.lowercased()) }
    }

    public func setBehaviour(_ behaviour: Behaviour) {
        state.withLockedValue { $0.behaviour = behaviour }
    }

    /// Require Alibaba `sign_d` signatures made with this secret (unsigned `d` is then refused).
    public func requireSignature(secret: String, now: Int) {
        state.withLockedValue {
            $0.secret = secret
            $0.now = now
        }
    }

    public func setStaticList(_ json: String) {
        state.withLockedValue { $0.staticList = json }
    }

    public func requests() -> [SeenRequest] {
        state.withLockedValue { $0.requests }
    }

    /// Queries for `name` across all formats.
    public func queryCount(for name: String) -> Int {
        let name = name.lowercased()
        return requests().filter { request in
            (request.query["host"]?.lowercased().split(separator: ",").contains { $0 == name } ?? false)
                || request.query["name"]?.lowercased() == name
                || request.path == "/dns-query"
        }.count
    }

    public var connectionCount: Int { state.withLockedValue { $0.connections } }

    // MARK: answering

    fileprivate static func respond(to request: SeenRequest, state box: NIOLockedValueBox<State>) -> (Int, String, [UInt8])? {
        let snapshot: State = box.withLockedValue { state in
            state.requests.append(request)
            return state
        }
        switch snapshot.behaviour {
        case .stall: return nil
        case .fail(let status, let body): return (status, "application/json", Array(body.utf8))
        case .garbage: return (200, "application/json", Array("{\"ips\":[\"1.2.3.4\"".utf8) + [0xff, 0x00])
        case .normal: break
        }
        let segments = request.path.split(separator: "/").map(String.init)
        if request.path == "/resolve" {
            return dohJSON(request, snapshot)
        }
        if request.path == "/dns-query" {
            return dohWire(request, snapshot)
        }
        if request.path == "/static.json" {
            guard let list = snapshot.staticList else { return (404, "text/plain", Array("no list".utf8)) }
            return (200, "application/json", Array(list.utf8))
        }
        if segments.count == 2 {
            return alibaba(kind: segments[1], request, snapshot)
        }
        return (404, "text/plain", Array("not found".utf8))
    }

    private static func chase(_ name: String, _ state: State) -> (String, [String]) {
        var current = name.lowercased()
        var chain: [String] = []
        var hops = 0
        while let next = state.cnames[current], hops < 8 {
            chain.append(current)
            current = next
            hops += 1
        }
        return (current, chain)
    }

    private static func json(_ object: Any) -> [UInt8] {
        Array((try? JSONSerialization.data(withJSONObject: object)) ?? Data())
    }

    private static func alibaba(kind: String, _ request: SeenRequest, _ state: State) -> (Int, String, [UInt8]) {
        let signed = kind.hasPrefix("sign_")
        let hosts = (request.query["host"] ?? "").split(separator: ",").map { String($0).lowercased() }
        if let secret = state.secret {
            guard signed else { return (403, "application/json", json(["code": "UnsignedInterfaceDisabled"])) }
            guard let t = request.query["t"].flatMap(Int.init), t > state.now else {
                return (403, "application/json", json(["code": "SignatureExpired"]))
            }
            let expected = AlibabaHTTPDNS.sign(host: hosts.joined(separator: ","), secret: secret, expiry: t)
            guard request.query["s"] == expected else { return (403, "application/json", json(["code": "InvalidSignature"])) }
        }
        guard !hosts.isEmpty else { return (400, "application/json", json(["code": "InvalidHost"])) }
        let families = (request.query["query"] ?? "4").split(separator: ",")
        func item(_ host: String) -> Record? { state.records[chase(host, state).0] }
        if kind == "d" || kind == "sign_d" {
            let host = hosts[0]
            let record = item(host) ?? Record(ttl: 60)
            return (200, "application/json", json([
                "host": host,
                "ips": families.contains("4") ? record.ipv4 : [],
                "ipsv6": families.contains("6") ? record.ipv6 : [],
                "ttl": record.ttl,
                "origin_ttl": record.ttl,
                "client_ip": "127.0.0.1",
            ]))
        }
        if kind == "resolve" || kind == "sign_resolve" {
            var items: [[String: Any]] = []
            for host in hosts {
                let record = item(host) ?? Record(ttl: 60)
                if families.contains("4") { items.append(["host": host, "ips": record.ipv4, "type": 1, "ttl": record.ttl]) }
                if families.contains("6") { items.append(["host": host, "ips": record.ipv6, "type": 28, "ttl": record.ttl]) }
            }
            return (200, "application/json", json(["dns": items]))
        }
        return (404, "application/json", json(["code": "NotFound"]))
    }

    private static func dohJSON(_ request: SeenRequest, _ state: State) -> (Int, String, [UInt8]) {
        let name = (request.query["name"] ?? "").lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "."))
        let type = Int(request.query["type"] ?? "1") ?? 1
        if state.nxdomain.contains(name) {
            return (200, "application/json", json([
                "Status": 3,
                "Question": ["name": name + ".", "type": type],
                "Authority": [["name": "test.", "type": 6, "TTL": 20, "data": "ns.test. admin.test. 1 7200 900 1209600 15"]],
            ]))
        }
        let (final, chain) = chase(name, state)
        var answers: [[String: Any]] = []
        var previous = name
        for link in chain.dropFirst() + [final] where link != name {
            answers.append(["name": previous + ".", "type": 5, "TTL": 300, "data": link + "."])
            previous = link
        }
        if let record = state.records[final] {
            for ip in type == 28 ? record.ipv6 : record.ipv4 {
                answers.append(["name": final + ".", "type": type, "TTL": record.ttl, "data": ip])
            }
        }
        return (200, "application/json", json(["Status": 0, "Question": ["name": name + ".", "type": type], "Answer": answers]))
    }

    private static func dohWire(_ request: SeenRequest, _ state: State) -> (Int, String, [UInt8]) {
        let query: [UInt8]
        if request.method == "POST" {
            query = request.body
        } else {
            guard let encoded = request.query["dns"], let bytes = Base64URL.decode(encoded) else {
                return (400, "text/plain", Array("missing dns".utf8))
            }
            query = bytes
        }
        guard let question = DNSWireResponder.question(in: query) else {
            return (400, "text/plain", Array("bad query".utf8))
        }
        let (final, _) = chase(question.name, state)
        let record = state.records[final]
        let ips = question.type == 28 ? (record?.ipv6 ?? []) : (record?.ipv4 ?? [])
        let response = DNSWireResponder.response(
            to: query,
            question: question,
            cname: final == question.name ? nil : final,
            addresses: ips,
            ttl: UInt32(record?.ttl ?? 60),
            nxdomain: state.nxdomain.contains(question.name)
        )
        return (200, "application/dns-message", response)
    }
}

enum Base64URL {
    static func decode(_ text: String) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64).map(Array.init)
    }
}
