import Foundation
import HTTPDNS
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// An in-process Tencent Cloud HTTPDNS `/d` on a loopback address and port 0. Like the real
/// service it checks `id` and, with `token=`, the token (https mode, clear answers), or with
/// `alg=` decrypts `dn` and `ip` with the account key and answers hex-encrypted (http mode).
/// https mode is served over plain loopback HTTP: the transport is not what is under test.
public final class FakeTencentService: TestServer {
    public struct Account: Sendable {
        public var id: String
        public var token: String
        public var aesKey: String
        public var desKey: String?

        public init(id: String, token: String, aesKey: String, desKey: String? = nil) {
            self.id = id
            self.token = token
            self.aesKey = aesKey
            self.desKey = desKey
        }
    }

    public enum Behaviour: Sendable {
        case normal
        /// Every request gets this status and body (sent as is, never encrypted).
        case fail(status: Int, body: String)
        /// Every request gets 200 with this body, sent as is.
        case raw([UInt8])
    }

    /// What one request asked, with `dn` and `ip` in clear (decrypted in http mode).
    public struct SeenRequest: Sendable {
        public var query: [String: String]
        public var names: [String]
        public var ecsIP: String?
    }

    struct State {
        var records: [String: FakeHTTPDNSService.Record] = [:]
        var behaviour: Behaviour = .normal
        var requests: [SeenRequest] = []
    }

    private let state: NIOLockedValueBox<State>
    private let channel: any Channel
    public let account: Account
    public let port: Int

    private init(account: Account, port: Int, channel: any Channel, state: NIOLockedValueBox<State>) {
        self.account = account
        self.port = port
        self.channel = channel
        self.state = state
    }

    public static func start(account: Account) async throws -> FakeTencentService {
        let box = NIOLockedValueBox(State())
        let (channel, port) = try await FakeHTTPServer.start(host: "127.0.0.1", port: 0) { request in
            let (status, bytes) = FakeTencentService.respond(to: request.uri, account: account, state: box)
            return (status, "text/plain", bytes)
        }
        return FakeTencentService(account: account, port: port, channel: channel, state: box)
    }

    deinit { channel.close(promise: nil) }

    package var listeners: [any Channel] { [channel] }

    /// The `/d` endpoint, e.g. http://127.0.0.1:PORT/d.
    public var endpoint: String { "http://127.0.0.1:\(port)/d" }

    public func set(_ name: String, _ record: FakeHTTPDNSService.Record) {
        state.withLockedValue { $0.records[name.lowercased()] = record }
    }

    public func setBehaviour(_ behaviour: Behaviour) {
        state.withLockedValue { $0.behaviour = behaviour }
    }

    public func requests() -> [SeenRequest] {
        state.withLockedValue { $0.requests }
    }

    static func respond(to uri: String, account: Account, state box: NIOLockedValueBox<State>) -> (Int, [UInt8]) {
        var query: [String: String] = [:]
        let components = URLComponents(string: uri)
        for item in components?.queryItems ?? [] { query[item.name] = item.value ?? "" }
        guard components?.path == "/d" else { return (404, Array("not found".utf8)) }
        guard query["id"] == account.id else { return (401, []) }
        var cipher: TencentCipher?
        var names = query["dn"] ?? ""
        var ecsIP = query["ip"]
        if let token = query["token"] {
            guard token == account.token else { return (401, []) }
        } else {
            switch query["alg"] {
            case "aes": cipher = try? TencentCipher(algorithm: .aes, key: account.aesKey)
            case "des": cipher = account.desKey.flatMap { try? TencentCipher(algorithm: .des, key: $0) }
            default: return (401, [])
            }
            guard let cipher, let clear = cipher.decryptHex(Array(names.utf8)) else { return (400, Array("dn does not decrypt".utf8)) }
            names = String(decoding: clear, as: UTF8.self)
            if let encrypted = ecsIP {
                guard let ip = cipher.decryptHex(Array(encrypted.utf8)) else { return (400, Array("ip does not decrypt".utf8)) }
                ecsIP = String(decoding: ip, as: UTF8.self)
            }
        }
        let hosts = names.split(separator: ",").map { $0.lowercased() }
        let snapshot = box.withLockedValue { state in
            state.requests.append(SeenRequest(query: query, names: hosts, ecsIP: ecsIP))
            return state
        }
        switch snapshot.behaviour {
        case .fail(let status, let body): return (status, Array(body.utf8))
        case .raw(let body): return (200, body)
        case .normal: break
        }
        var lines = hosts.map { host -> String in
            let text = answer(snapshot.records[host], type: query["type"], ttl: query["ttl"] == "1")
            return hosts.count > 1 ? "\(host).:\(text.isEmpty ? "0" : text)" : text
        }
        if query["clientip"] == "1", !lines.isEmpty { lines[lines.count - 1] += "|" + (ecsIP ?? "127.0.0.1") }
        let text = lines.joined(separator: "\n")
        guard let cipher, !text.isEmpty else { return (200, Array(text.utf8)) }
        return (200, Array((cipher.encryptHex(text) ?? "").utf8))
    }

    /// `v4;v4,ttl`, `v6,ttl` for type=aaaa, `v4,ttl-v6,ttl` for addrs ("0" for an empty family).
    static func answer(_ record: FakeHTTPDNSService.Record?, type: String?, ttl: Bool) -> String {
        func family(_ ips: [String]) -> String {
            guard let record, !ips.isEmpty else { return "0" }
            return ips.joined(separator: ";") + (ttl ? ",\(record.ttl)" : "")
        }
        switch type?.lowercased() {
        case "aaaa": return record?.ipv6.isEmpty == false ? family(record!.ipv6) : ""
        case "addrs": return record == nil ? "" : family(record!.ipv4) + "-" + family(record!.ipv6)
        default: return record?.ipv4.isEmpty == false ? family(record!.ipv4) : ""
        }
    }
}
