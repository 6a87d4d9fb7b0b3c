/// Generates HTTP/1 messages for the differential test: mostly well-formed heads with the fields
/// whose handling differs between parsers (framing, Connection, Upgrade, spellings, OWS), bodies
/// that match or contradict their framing, then byte-level mutations aimed at the strictness rules
/// (CR, LF, NUL, spaces, colons, commas, semicolons, DEL, obs-text).
package enum MessageGenerator {
    package static func pick<T>(_ choices: [T], _ rng: inout SplitMix64) -> T {
        choices[Int(rng.next() % UInt64(choices.count))]
    }

    static func chance(_ percent: UInt64, _ rng: inout SplitMix64) -> Bool { rng.next() % 100 < percent }

    static let methods = ["GET", "GET", "POST", "POST", "PUT", "HEAD", "OPTIONS", "TRACE", "DELETE", "PATCH", "CONNECT", "get", "FOO", "M-SEARCH"]
    static let targets = ["http://a.test/", "http://a.test:8080/x?y=1", "/origin/form", "*", "http://[::1]:80/p", "a.test:443", "http://a.test/%20q#frag"]
    static let versions = ["HTTP/1.1", "HTTP/1.1", "HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/1.2", "http/1.1", "HTTP/1.1 "]
    static let statuses = [200, 200, 201, 204, 304, 100, 103, 101, 404, 500, 199, 302, 600, 99]
    static let bodyText = Array("hello, world: the quick brown fox\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n".utf8)

    /// A field line from the pool, and what it says about framing.
    static func field(_ rng: inout SplitMix64) -> String {
        pick([
            "Host: a.test", "X-A: 1", "X-Spaces:   padded value  ", "X-Tab:\tv", "X-Empty:", "Via: 1.1 other",
            "Connection: close", "Connection: keep-alive", "Connection: Upgrade", "Connection: x-hop, Keep-Alive", "X-Hop: dropped",
            "Upgrade: websocket", "TE: trailers", "Keep-Alive: timeout=5", "Proxy-Connection: keep-alive", "Trailer: X-Sum",
            "Max-Forwards: 2", "Set-Cookie: a=b", "X-Obs: caf\u{E9}", "Content-Type: text/plain",
        ], &rng)
    }

    static func framingFields(_ rng: inout SplitMix64, body: Int) -> [String] {
        switch rng.next() % 16 {
        case 0, 1, 2: return ["Content-Length: \(body)"]
        case 3, 4, 5: return ["Transfer-Encoding: chunked"]
        case 6: return [pick(["Transfer-Encoding: CHUNKED", "Transfer-Encoding:  chunked ", "Transfer-Encoding: gzip, chunked", "Transfer-Encoding: chunked, gzip", "Transfer-Encoding: gzip", "Transfer-Encoding:", "Transfer-Encoding: chunked;q=1", "Transfer-Encoding: ,chunked"], &rng)]
        case 7: return ["Transfer-Encoding: gzip", "Transfer-Encoding: chunked"]
        case 8: return ["Content-Length: \(body)", "Transfer-Encoding: chunked"]
        case 9: return ["Transfer-Encoding: chunked", "Content-Length: \(body)"]
        case 10: return ["Content-Length: \(body)", "Content-Length: \(body)"]
        case 11: return [pick(["Content-Length: 00\(body)", "Content-Length: +\(body)", "Content-Length: \(body), \(body)", "Content-Length: 0x\(body)", "Content-Length: \(body) ", "Content-Length: 1234567890123456789", "Content-Length:", "Content-Length: 99999999999999999999"], &rng)]
        default: return []
        }
    }

    /// A chunked body of `payload`: random chunk sizes, some extensions, maybe trailers.
    static func chunked(_ payload: [UInt8], _ rng: inout SplitMix64) -> [UInt8] {
        var out: [UInt8] = []
        var rest = payload[...]
        while !rest.isEmpty {
            let size = 1 + Int(rng.next() % UInt64(rest.count))
            let hex = String(size, radix: 16, uppercase: chance(30, &rng))
            let leading = chance(10, &rng) ? "00" : ""
            let ext = chance(15, &rng) ? pick([";a=b", ";name", "; x = \"q\\\"s\"", " ;bws", ";a=\"unterminated"], &rng) : ""
            out += Array("\(leading)\(hex)\(ext)\r\n".utf8) + rest.prefix(size) + Array("\r\n".utf8)
            rest = rest.dropFirst(size)
        }
        out += Array("0\r\n".utf8)
        if chance(25, &rng) {
            out += Array(pick(["X-Sum: 1\r\n", "Content-Type: evil\r\nX-Ok: 2\r\n", "Bad Name: x\r\n"], &rng).utf8)
        }
        out += Array("\r\n".utf8)
        return out
    }

    static func message(startLine: String, _ rng: inout SplitMix64) -> [UInt8] {
        let payload = Array(bodyText.prefix(Int(rng.next() % UInt64(bodyText.count + 1))))
        var fields = (0..<Int(rng.next() % 5)).map { _ in field(&rng) }
        let framing = framingFields(&rng, body: payload.count)
        for line in framing { fields.insert(line, at: Int(rng.next() % UInt64(fields.count + 1))) }
        var out = Array((startLine + "\r\n" + fields.map { $0 + "\r\n" }.joined() + "\r\n").utf8)
        if framing.contains(where: { $0.lowercased().hasPrefix("transfer-encoding") }) {
            out += chunked(payload, &rng)
        } else {
            out += payload
        }
        return out
    }

    /// One to three pipelined requests.
    package static func requests(_ rng: inout SplitMix64) -> [UInt8] {
        var out: [UInt8] = []
        for _ in 0..<1 + Int(rng.next() % 3) {
            let method = pick(methods, &rng)
            let target = method == "CONNECT" ? "a.test:443" : pick(targets, &rng)
            if chance(5, &rng) { out += Array("\r\n".utf8) }
            out += message(startLine: "\(method) \(target) \(pick(versions, &rng))", &rng)
        }
        return out
    }

    /// Interim responses maybe, then a final one; and the request it answers.
    package static func response(_ rng: inout SplitMix64) -> DifferentialInput {
        var out: [UInt8] = []
        if chance(15, &rng) { out += Array("HTTP/1.1 100 Continue\r\n\r\n".utf8) }
        if chance(10, &rng) { out += Array("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n".utf8) }
        let status = pick(statuses, &rng)
        let reason = pick([" OK", " ", "", " Some Reason\tWith Tab", " caf\u{E9}"], &rng)
        out += message(startLine: "\(pick(versions, &rng)) \(status)\(reason)", &rng)
        if chance(10, &rng) { out += Array("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".utf8) }
        let method = pick(DifferentialInput.Method.allCases, &rng)
        return DifferentialInput(bytes: out, method: method, upgradeRequested: chance(20, &rng))
    }

    static let interesting: [UInt8] = [0x0D, 0x0A, 0x00, 0x20, 0x09, 0x3A, 0x2C, 0x3B, 0x7F, 0x80, 0xFF, 0x22, 0x61, 0x30, 0x0B, 0x46]

    /// Zero to three byte-level edits.
    package static func mutate(_ bytes: [UInt8], _ rng: inout SplitMix64) -> [UInt8] {
        var out = bytes
        for _ in 0..<Int(rng.next() % 4) where !out.isEmpty {
            let at = Int(rng.next() % UInt64(out.count))
            switch rng.next() % 7 {
            case 0: out[at] = pick(interesting, &rng)
            case 1: out.insert(pick(interesting, &rng), at: at)
            case 2: out.remove(at: at)
            case 3:
                // CRLF to bare LF or bare CR.
                if let cr = out[at...].firstIndex(of: 0x0D) { out.remove(at: chance(50, &rng) ? cr : min(cr + 1, out.count - 1)) }
            case 4:
                // obs-fold: a line break and a space inside a line.
                out.insert(contentsOf: [0x0D, 0x0A, 0x20], at: at)
            case 5:
                // Duplicate a line.
                if let lf = out[at...].firstIndex(of: 0x0A) {
                    let start = (out[..<at].lastIndex(of: 0x0A) ?? -1) + 1
                    out.insert(contentsOf: Array(out[start...lf]), at: lf + 1)
                }
            default:
                out.removeLast(Int(rng.next() % UInt64(min(out.count, 8) + 1)))
            }
        }
        return out
    }

    /// Up to four random read boundaries.
    package static func splits(_ count: Int, _ rng: inout SplitMix64) -> [Int] {
        guard count > 1 else { return [] }
        return (0..<Int(rng.next() % 5)).map { _ in 1 + Int(rng.next() % UInt64(count - 1)) }
    }
}
