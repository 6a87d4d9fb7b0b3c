import Foundation
import HTTPDNS
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// An in-process Alibaba Cloud HTTPDNS v2 service on a loopback address and port 0: `/v2/d` and
/// the scheduling endpoint `/{account}/ss`. Like the real service it checks the account, the
/// HMAC-SHA256 signature and its expiry (when a secret is set), decrypts `enc` (m=1 CBC, m=2
/// GCM) and encrypts its `data` the same way. The signature check is its own code (sorting and
/// joining the parameters here), so it catches a client that signs the wrong text.
public final class FakeAlibabaV2Service: TestServer {
    public typealias Record = FakeHTTPDNSService.Record

    /// What `/ss` answers.
    public enum Schedule: Sendable {
        case ips([String])
        case disabled
        case fail(status: Int)
    }

    struct State {
        var account: String
        var secretHex: String?
        var aesKey: [UInt8]?
        var now = Int(Date().timeIntervalSince1970)
        var records: [String: Record] = [:]
        var failQueries: (status: Int, code: String)?
        var schedule: Schedule = .fail(status: 404)
        var requests: [FakeHTTPDNSService.SeenRequest] = []
    }

    let state: NIOLockedValueBox<State>
    private let channel: any Channel
    public let host: String
    public let port: Int

    /// `secretHex`: require signatures made with this hex secret key. `aesKeyHex`: the account's
    /// AES key (needed to answer m=1/m=2).
    public static func start(
        host: String = "127.0.0.1", port: Int = 0, account: String, secretHex: String? = nil, aesKeyHex: String? = nil
    ) async throws -> FakeAlibabaV2Service {
        let box = NIOLockedValueBox(State(account: account, secretHex: secretHex, aesKey: aesKeyHex.flatMap(Digest.bytes(fromHex:))))
        let (channel, bound) = try await FakeHTTPServer.start(host: host, port: port) { request in
            FakeAlibabaV2Service.respond(to: request, state: box)
        }
        return FakeAlibabaV2Service(host: host, port: bound, channel: channel, state: box)
    }

    private init(host: String, port: Int, channel: any Channel, state: NIOLockedValueBox<State>) {
        self.host = host
        self.port = port
        self.channel = channel
        self.state = state
    }

    deinit {
        channel.close(promise: nil)
    }

    package var listeners: [any Channel] { [channel] }

    public func set(_ name: String, _ record: Record) {
        state.withLockedValue { $0.records[name.lowercased()] = record }
    }

    /// The service's clock for signature expiry (unix seconds).
    public func setNow(_ now: Int) {
        state.withLockedValue { $0.now = now }
    }

    public func setSchedule(_ schedule: Schedule) {
        state.withLockedValue { $0.schedule = schedule }
    }

    /// Answer every `/v2/d` with this status and `{"code": code}`; nil answers normally.
    public func failQueries(_ failure: (status: Int, code: String)?) {
        state.withLockedValue { $0.failQueries = failure }
    }

    public func requests() -> [FakeHTTPDNSService.SeenRequest] {
        state.withLockedValue { $0.requests }
    }

    public var queryRequests: [FakeHTTPDNSService.SeenRequest] { requests().filter { $0.path == "/v2/d" } }
    public var scheduleRequests: [FakeHTTPDNSService.SeenRequest] { requests().filter { $0.path.hasSuffix("/ss") } }

    // MARK: answering

    static func respond(to request: FakeHTTPDNSService.SeenRequest, state box: NIOLockedValueBox<State>) -> (Int, String, [UInt8])? {
        let state = box.withLockedValue { state in
            state.requests.append(request)
            return state
        }
        if request.path == "/\(state.account)/ss" { return schedule(request, state) }
        guard request.path == "/v2/d" else { return error(404, "NotFound") }
        if let failure = state.failQueries { return error(failure.status, failure.code) }
        return query(request, state)
    }

    private static func query(_ request: FakeHTTPDNSService.SeenRequest, _ state: State) -> (Int, String, [UInt8]) {
        let q = request.query
        guard q["id"] == state.account else { return error(403, "InvalidAccount") }
        guard let mode = q["m"].flatMap(Int.init), (0...2).contains(mode), q["v"] == "1.0" else { return error(400, "MissingArgument") }
        if let secretHex = state.secretHex {
            guard let expiry = q["exp"].flatMap(Int.init), let signature = q["s"] else { return error(403, "InvalidSignature") }
            guard expiry > state.now else { return error(403, "SignatureExpired") }
            let signed = ["id", "m", "dn", "cip", "q", "enc", "exp", "tags", "v"]
            let text = q.filter { (signed.contains($0.key) || $0.key.hasPrefix("sdns-")) && !$0.value.isEmpty }
                .map { "\($0.key)=\($0.value)" }.sorted().joined(separator: "&")
            let key = Digest.bytes(fromHex: secretHex) ?? []
            guard signature == Digest.hmacSHA256Hex(key: key, message: text) else { return error(403, "InvalidSignature") }
        }
        var names = q["dn"]
        var families = q["q"]
        if mode != 0 {
            guard let key = state.aesKey, let enc = q["enc"].flatMap(Digest.bytes(fromHex:)),
                  let plain = decrypt(enc, mode: mode, key: key),
                  let question = try? JSONSerialization.jsonObject(with: Data(plain)) as? [String: Any]
            else { return error(400, "MissingArgument") }
            names = question["dn"] as? String
            families = question["q"] as? String
        }
        guard let names, !names.isEmpty else { return error(400, "MissingArgument") }
        let hosts = names.split(separator: ",").map { String($0).lowercased() }
        guard hosts.count <= 5 else { return error(400, "TooManyHosts") }
        let wanted = (families ?? "4").split(separator: ",")
        var answers: [[String: Any]] = []
        for host in hosts {
            let record = state.records[host] ?? Record(ttl: 60)
            var item: [String: Any] = ["dn": host]
            if wanted.contains("4") { item["v4"] = family(record.ipv4, ttl: record.ttl) }
            if wanted.contains("6") { item["v6"] = family(record.ipv6, ttl: record.ttl) }
            answers.append(item)
        }
        let data: [String: Any] = ["cip": "127.0.0.1", "answers": answers]
        guard mode != 0 else { return (200, "application/json", json(["code": "success", "mode": 0, "data": data])) }
        guard let sealed = encrypt(json(data), mode: mode, key: state.aesKey ?? []) else { return error(500, "InternalError") }
        return (200, "application/json", json(["code": "success", "mode": mode, "data": Data(sealed).base64EncodedString()]))
    }

    private static func family(_ ips: [String], ttl: Int) -> [String: Any] {
        ips.isEmpty ? ["ips": [String](), "ttl": ttl, "no_ip_code": "RRNotExist"] : ["ips": ips, "ttl": ttl]
    }

    private static func schedule(_ request: FakeHTTPDNSService.SeenRequest, _ state: State) -> (Int, String, [UInt8]) {
        if let secret = state.secretHex {
            guard let t = request.query["t"].flatMap(Int.init), let nonce = request.query["n"], t > state.now,
                  request.query["s"] == Digest.md5Hex("\(nonce)-\(secret)-\(t)")
            else { return error(403, "InvalidSignature") }
        }
        switch state.schedule {
        case .ips(let ips):
            return (200, "application/json", json(["service_ip": ips.filter { !$0.contains(":") }, "service_ipv6": ips.filter { $0.contains(":") }]))
        case .disabled:
            return (200, "application/json", json(["service_ip": [String](), "service_status": "disable"]))
        case .fail(let status):
            return error(status, "InternalError")
        }
    }

    private static func decrypt(_ bytes: [UInt8], mode: Int, key: [UInt8]) -> [UInt8]? {
        let ivLength = mode == 1 ? 16 : 12
        guard bytes.count > ivLength else { return nil }
        let iv = Array(bytes.prefix(ivLength))
        let rest = Array(bytes.dropFirst(ivLength))
        return mode == 1 ? AES128.cbcDecrypt(key: key, iv: iv, ciphertext: rest) : AES128.gcmDecrypt(key: key, iv: iv, sealed: rest)
    }

    private static func encrypt(_ plain: [UInt8], mode: Int, key: [UInt8]) -> [UInt8]? {
        guard let iv = AES128.randomBytes(mode == 1 ? 16 : 12) else { return nil }
        let sealed = mode == 1 ? AES128.cbcEncrypt(key: key, iv: iv, plaintext: plain) : AES128.gcmEncrypt(key: key, iv: iv, plaintext: plain)
        return sealed.map { iv + $0 }
    }

    private static func error(_ status: Int, _ code: String) -> (Int, String, [UInt8]) {
        (status, "application/json", json(["code": code]))
    }

    private static func json(_ object: Any) -> [UInt8] {
        Array((try? JSONSerialization.data(withJSONObject: object)) ?? Data())
    }
}
