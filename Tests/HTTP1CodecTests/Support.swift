import HTTP1Codec
import HTTP1CodecOracle
import NIOCore

/// The codec's transcript of `text` read at once (`splits` cut it into reads).
func decode(
    _ text: String, _ role: Role = .request, method: DifferentialInput.Method = .GET, upgrade: Bool = false,
    splits: [Int] = [], limits: HTTP1Limits = HTTP1Limits()
) -> Transcript {
    decode(Array(text.utf8), role, method: method, upgrade: upgrade, splits: splits, limits: limits)
}

func decode(
    _ bytes: [UInt8], _ role: Role = .request, method: DifferentialInput.Method = .GET, upgrade: Bool = false,
    splits: [Int] = [], limits: HTTP1Limits = HTTP1Limits()
) -> Transcript {
    CodecRunner.transcript(DifferentialInput(bytes: bytes, splits: splits, method: method, upgradeRequested: upgrade), role: role, limits: limits)
}

/// The one head of `text` (a complete head), parsed directly.
func head(_ text: String, _ role: Role = .request, context: ResponseContext = ResponseContext(method: .get)) throws -> HTTP1Head {
    var decoder = MessageDecoder(role: role)
    if role == .response { decoder.expectResponse(context) }
    var buffer = ByteBuffer(string: text)
    guard case .head(let head) = try decoder.next(&buffer) else { throw Unexpected.noHead }
    return head
}

enum Unexpected: Error { case noHead }

extension Transcript {
    /// The refusal's reason, or nil.
    var reason: String? {
        if case .error(_, let reason) = outcome { return reason }
        return nil
    }

    var bodies: [String] { messages.map { String(decoding: $0.body, as: UTF8.self) } }
}

/// A request with these field lines (each ending in CRLF) and body.
func post(_ fields: String, body: String = "", version: String = "1.1") -> String {
    "POST http://a.test/x HTTP/\(version)\r\nHost: a.test\r\n\(fields)\r\n\(body)"
}

func get(_ fields: String = "", target: String = "http://a.test/x", version: String = "1.1") -> String {
    "GET \(target) HTTP/\(version)\r\n\(fields)\r\n"
}

func response(_ startLine: String = "HTTP/1.1 200 OK", _ fields: String, body: String = "") -> String {
    "\(startLine)\r\n\(fields)\r\n\(body)"
}
