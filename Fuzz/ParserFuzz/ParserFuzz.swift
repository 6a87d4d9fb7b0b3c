// libFuzzer entry point for the parsers that read attacker bytes. Built only by
// scripts/fuzz.sh (HTTPDNS_PROXY_FUZZ=1 adds this target to the package); the environment
// variable FUZZ_TARGET picks the parser.
import Foundation
import HTTP1Codec
import HTTP1CodecOracle
import HTTPDNS
import NIOHTTP1
@testable import ProxyHTTP
@testable import ProxyKit
@testable import TransparentProxy

enum FuzzTarget: String {
    case requestTarget = "request-target"
    case headerRewriter = "header-rewriter"
    case dnsWire = "dns-wire"
    case dohJSON = "doh-json"
    case alibabaJSON = "alibaba-json"
    case staticList = "static-list"
    case clientHello = "client-hello"
    case dnsQuery = "dns-query"
    case codecRequest = "codec-request"
    case codecResponse = "codec-response"
}

let target: FuzzTarget = {
    let name = ProcessInfo.processInfo.environment["FUZZ_TARGET"] ?? ""
    guard let target = FuzzTarget(rawValue: name) else {
        fatalError("set FUZZ_TARGET to one of: request-target, header-rewriter, dns-wire, doh-json, alibaba-json, static-list, client-hello, dns-query, codec-request, codec-response")
    }
    return target
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    switch target {
    case .requestTarget:
        let text = String(decoding: bytes, as: UTF8.self)
        if let parsed = try? RequestTarget.parseAbsolute(text) {
            precondition(!parsed.host.isEmpty && (0...65535).contains(parsed.port) && parsed.pathAndQuery.hasPrefix("/"))
        }
        if let parsed = try? RequestTarget.parseConnectAuthority(text) {
            precondition(!parsed.host.isEmpty && (0...65535).contains(parsed.port))
        }
        _ = RequestTarget.loggable(text)
        let echoed = ProxyError.sanitized(text)
        precondition(echoed.utf8.count <= 4 * 100 + 3 && !echoed.contains("<") && !echoed.contains("\r"))
    case .headerRewriter:
        fuzzRewriter(bytes)
    case .dnsWire:
        _ = try? DNSMessage.parse(bytes, name: "a.test", type: .a, expectedID: nil)
        _ = try? DNSMessage.parse(bytes, name: "a.test", type: .aaaa, expectedID: 0x1234)
    case .dohJSON:
        _ = try? DoHJSON.parse(bytes, name: "a.test", type: .a)
    case .alibabaJSON:
        _ = try? AlibabaHTTPDNS.parseSingle(bytes)
        _ = try? AlibabaHTTPDNS.parseBatch(bytes)
    case .staticList:
        _ = try? StaticList.parse(bytes)
    case .clientHello:
        fuzzPeek(bytes)
    case .dnsQuery:
        fuzzDNSQuery(bytes)
    case .codecRequest:
        fuzzCodec(bytes, role: .request)
    case .codecResponse:
        fuzzCodec(bytes, role: .response)
    }
    return 0
}

/// First line: "METHOD VERSION_MINOR STATUS"; then one "name:value" field per line. Runs both
/// rewriters and checks what must always hold of the forwarded request.
func fuzzRewriter(_ bytes: [UInt8]) {
    let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
    guard let first = lines.first else { return }
    let words = first.split(separator: " ")
    let method = HTTPMethod(rawValue: words.first.map(String.init) ?? "GET")
    let minor = words.count > 1 ? (Int(words[1]) ?? 1) & 1 : 1
    let status = words.count > 2 ? (Int(words[2]) ?? 200) : 200
    var headers = HTTPHeaders()
    for line in lines.dropFirst() {
        guard let colon = line.firstIndex(of: ":") else { continue }
        // What the decoder can produce: a token name (ASCII), a value without CR/LF/NUL.
        let name = String(line[..<colon])
        let value = String(line[line.index(after: colon)...])
        guard MessageFraming.isToken(name), !value.utf8.contains(where: { $0 == 0 || $0 == 10 || $0 == 13 }) else { continue }
        headers.add(name: name, value: value)
    }
    let head = HTTPRequestHead(version: HTTPVersion(major: 1, minor: minor), method: method, uri: "http://a.test/", headers: headers)
    let via = ViaHeader(pseudonym: "fuzz")
    if let out = try? MessageRewriter.rewriteRequest(head, target: RequestTarget.parseAbsolute("http://a.test/"), via: via) {
        let forwarded = out.head.headers
        let codings = forwarded.filter { $0.name.lowercased() == "transfer-encoding" }.map(\.value)
        let lengths = forwarded.filter { $0.name.lowercased() == "content-length" }.map(\.value)
        precondition(codings.isEmpty || codings == ["chunked"], "forwarded Transfer-Encoding \(codings)")
        precondition(codings.isEmpty || lengths.isEmpty, "forwarded both Transfer-Encoding and Content-Length")
        precondition(lengths.count <= 1 && lengths.allSatisfy { Int($0) != nil && $0.first != "+" }, "forwarded Content-Length \(lengths)")
        precondition((out.framing == .chunked) == !codings.isEmpty)
        for name in ["proxy-authorization", "proxy-connection", "keep-alive", "trailer", "upgrade"] where !out.isUpgrade || name != "upgrade" {
            precondition(!forwarded.contains(name: name), "forwarded \(name)")
        }
    }
    _ = MessageFraming.forwardableTrailers(headers)
    let response = HTTPResponseHead(version: HTTPVersion(major: 1, minor: minor), status: HTTPResponseStatus(statusCode: max(100, min(999, status))), headers: headers)
    if let out = try? MessageRewriter.rewriteResponse(
        response, requestMethod: method, clientVersion: .http1_1, clientKeepAlive: true, isUpgradeResponse: false, via: via
    ) {
        let codings = out.head.headers.filter { $0.name.lowercased() == "transfer-encoding" }.map(\.value)
        precondition(codings.isEmpty || codings == ["chunked"], "relayed Transfer-Encoding \(codings)")
    }
}

/// The transparent listener's first-bytes reader (TLS ClientHello SNI, HTTP Host): a name it
/// returns is a lower-case DNS name, and a decision made on a prefix never changes when more
/// bytes arrive (the listener acts on the first one). The first input byte picks the prefix.
func fuzzPeek(_ bytes: [UInt8]) {
    let whole = TransparentPeek.classify(bytes)
    switch whole {
    case .tls(let name?), .http(let name?):
        precondition(!name.isEmpty && name.utf8.count <= 253 && name == name.lowercased(), "name \(name)")
        precondition(name.utf8.allSatisfy { $0 == 0x2E || $0 == 0x2D || $0 == 0x5F || (0x30...0x39).contains($0) || (0x61...0x7A).contains($0) })
    default:
        break
    }
    guard let first = bytes.first, bytes.count > 1 else { return }
    let cut = 1 + Int(first) * (bytes.count - 1) / 255
    let prefix = TransparentPeek.classify(bytes[1..<cut])
    let rest = TransparentPeek.classify(bytes[1...])
    if prefix != .needMore {
        precondition(prefix == rest, "prefix decided \(prefix), whole \(rest)")
    }
}

/// The DNS listener's parser: a parsed query's question is a well-formed name + type + class, and
/// every answer built for it (a tight UDP limit, an address, a negative answer) is well-formed too.
func fuzzDNSQuery(_ bytes: [UInt8]) {
    do {
        let query = try DNSQuery.parse(bytes)
        precondition(bytes.count <= DNSQuery.maximumLength && query.question.count >= 5 && query.question.count <= 259)
        precondition((512...DNSQuery.advertisedPayloadSize).contains(query.udpLimit))
        for answer in [
            DNSAnswerBuilder.answer(to: query, rcode: 0, records: [.init(type: 1, ttl: 60, rdata: [192, 0, 2, 1])], limit: query.udpLimit),
            DNSAnswerBuilder.answer(to: query, rcode: 3, negativeTTL: 30, limit: query.udpLimit),
            DNSAnswerBuilder.relay(bytes, to: query, limit: query.udpLimit),
        ] {
            precondition(answer.count >= 12 && answer.count <= max(query.udpLimit, bytes.count))
            precondition(answer[0] == UInt8(query.id >> 8) && answer[1] == UInt8(query.id & 0xFF))
        }
    } catch {
        if case .reply(let rcode, let id, let flags, let question, let edns, _) = error {
            let answer = DNSAnswerBuilder.problem(rcode: rcode, id: id, queryFlags: flags, question: question, edns: edns)
            precondition(answer.count >= 12 && answer.count <= 12 + 259 + 11)
        }
    }
}

/// The new HTTP/1 codec against today's stack (Tests/HTTP1CodecOracle): the first byte picks the
/// request method a response answers, whether it asked to upgrade, and where the bytes are cut
/// into reads (`DifferentialInput(fuzz:)`); any disagreement that is not one of the documented
/// differences by design traps, with both transcripts.
func fuzzCodec(_ bytes: [UInt8], role: Role) {
    if let report = Differential.check(DifferentialInput(fuzz: bytes), role: role) {
        preconditionFailure("codec disagreement:\n\(report)")
    }
}

// SwiftPM links an executable target's entry point as `<Target>_main`; hand control to
// libFuzzer's driver from there (libFuzzer's own `main` is then not linked in).
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
) -> CInt

@_cdecl("ParserFuzz_main")
public func parserFuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    var argc = argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = argv
    return LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzz(data, size) }
}
