#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HTTPDNS

/// What the DoH listener does with one HTTP request: a pure decision over its method, target,
/// Authorization header and body, so the handler only carries it out.
enum DoHRequest: Equatable {
    /// Answer the DNS message `query`; `json` names the question when the answer must be the JSON
    /// form (`/resolve`), nil for RFC 8484 `application/dns-message`.
    case query([UInt8], json: JSONQuestion?)
    case reject(status: Int, message: String)

    struct JSONQuestion: Equatable {
        var name: String
        var type: DNSRecordType
    }

    /// Request bodies (POST /dns-query) longer than this are refused with 413.
    static let maximumBody = 4096

    static func decide(method: String, uri: String, authorization: String?, token: String?, body: [UInt8]) -> DoHRequest {
        let components = URLComponents(string: uri)
        let path = components?.path ?? uri
        var query: [String: String] = [:]
        for item in components?.queryItems ?? [] where query[item.name] == nil { query[item.name] = item.value ?? "" }
        guard path == "/dns-query" || path == "/resolve" else { return .reject(status: 404, message: "no such path; use /dns-query or /resolve") }
        if let token, !authorized(authorization, token: token) {
            return .reject(status: 401, message: "a bearer token is required (Authorization: Bearer ...)")
        }
        if path == "/resolve" {
            guard method == "GET" else { return .reject(status: 405, message: "/resolve takes GET") }
            guard let name = query["name"], !name.isEmpty else { return .reject(status: 400, message: "missing name=") }
            let type: DNSRecordType
            switch (query["type"] ?? "A").uppercased() {
            case "A", "1": type = .a
            case "AAAA", "28": type = .aaaa
            default: return .reject(status: 400, message: "type= must be A or AAAA")
            }
            guard let message = try? DNSMessage.makeQuery(name: name, type: type) else {
                return .reject(status: 400, message: "not a host name")
            }
            return .query(message, json: JSONQuestion(name: name, type: type))
        }
        switch method {
        case "GET":
            guard let text = query["dns"], let message = base64URLDecode(text) else {
                return .reject(status: 400, message: "missing or malformed dns= (base64url without padding)")
            }
            return .query(message, json: nil)
        case "POST":
            guard body.count <= maximumBody else { return .reject(status: 413, message: "DNS message longer than \(maximumBody) bytes") }
            return .query(body, json: nil)
        default:
            return .reject(status: 405, message: "/dns-query takes GET or POST")
        }
    }

    /// Constant-time comparison of `Bearer <token>` with the configured token.
    static func authorized(_ header: String?, token: String) -> Bool {
        guard let header, header.hasPrefix("Bearer ") else { return false }
        let given = Array(header.dropFirst(7).utf8)
        let wanted = Array(token.utf8)
        var difference = given.count ^ wanted.count
        for index in 0..<wanted.count { difference |= Int(wanted[index] ^ (index < given.count ? given[index] : 0)) }
        return difference == 0
    }

    /// RFC 4648 section 5 without padding (padding tolerated); nil for any other byte or a
    /// message over 65,535 bytes.
    static func base64URLDecode(_ text: String) -> [UInt8]? {
        var input = Array(text.utf8)
        while input.last == UInt8(ascii: "=") { input.removeLast() }
        guard input.count <= 87_384, input.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(input.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in input {
            let value: UInt32
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(byte - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(byte - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(byte - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "_"): value = 63
            default: return nil
            }
            accumulator = accumulator << 6 | value
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8((accumulator >> UInt32(bits)) & 0xFF))
            }
        }
        return out
    }

    /// The JSON form (the shape the `json` provider reads) of the listener's answer to `question`.
    static func json(answer: [UInt8], question: JSONQuestion) -> String {
        let name = question.name.hasSuffix(".") ? question.name : question.name + "."
        let rcode = answer.count >= 4 ? Int(answer[3] & 0x0F) : 2
        var fields = [
            "\"Status\":\(rcode)", "\"TC\":false", "\"RD\":true", "\"RA\":true", "\"AD\":false", "\"CD\":false",
            "\"Question\":[{\"name\":\(JSONText.quoted(name)),\"type\":\(question.type.rawValue)}]",
        ]
        if rcode == 0 || rcode == 3, let parsed = try? DNSMessage.parse(answer, name: question.name, type: question.type, expectedID: nil) {
            let ttl = parsed.ttl ?? 0
            switch parsed.outcome {
            case .addresses:
                let records = (question.type == .a ? parsed.ipv4 : parsed.ipv6).map {
                    "{\"name\":\(JSONText.quoted(name)),\"type\":\(question.type.rawValue),\"TTL\":\(ttl),\"data\":\(JSONText.quoted($0))}"
                }
                fields.append("\"Answer\":[\(records.joined(separator: ","))]")
            case .nxdomain, .noData:
                fields.append("\"Authority\":[{\"name\":\(JSONText.quoted(name)),\"type\":6,\"TTL\":\(ttl),\"data\":\". . 0 3600 600 86400 \(ttl)\"}]")
            }
        }
        return "{" + fields.joined(separator: ",") + "}"
    }
}
