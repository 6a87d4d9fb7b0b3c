/// What a decoder made of a byte stream, in a form both stacks can be reduced to: the messages
/// with their start line, fields, body bytes and trailers, and how the stream ended. Two stacks
/// agree on a stream when their transcripts are equal, up to the differences by design that
/// `Differential.disagreement` lists with the RFC clause that makes the codec right.
package struct Transcript: Equatable, Sendable, CustomStringConvertible {
    package struct Message: Equatable, Sendable {
        /// Request: the method; response: the status code.
        package var method = ""
        package var target = ""
        package var status = 0
        package var minorVersion = 1
        package var fields: [String] = []
        package var body: [UInt8] = []
        package var ended = false
        package var trailers: [String]?

        package init() {}
    }

    package enum Outcome: Equatable, Sendable {
        /// The input ended between messages.
        case clean
        /// The input ended inside a message.
        case truncated
        /// The decoder stopped parsing HTTP: "tunnel", "upgrade" or "close".
        case stopped(String)
        /// Refused: the ProxyError kind ("malformed_request", "invalid_response", ...) and the text.
        case error(kind: String, reason: String)
    }

    package var messages: [Message] = []
    package var outcome: Outcome = .clean

    package init() {}

    package var errorKind: String? {
        if case .error(let kind, _) = outcome { return kind }
        return nil
    }

    package var description: String {
        var lines: [String] = []
        for (index, message) in messages.enumerated() {
            let start = message.status != 0
                ? "\(message.status) HTTP/1.\(message.minorVersion)"
                : "\(message.method) \(message.target.prefix(60)) HTTP/1.\(message.minorVersion)"
            lines.append("#\(index) \(start) fields=\(message.fields) body=\(message.body.count)B \(String(decoding: message.body.prefix(40), as: UTF8.self).debugDescription) ended=\(message.ended) trailers=\(message.trailers.map { "\($0)" } ?? "nil")")
        }
        lines.append("outcome: \(outcome)")
        return lines.joined(separator: "\n")
    }
}

/// One differential case: the bytes, where they are cut into reads, and (responses) the request
/// they answer.
package struct DifferentialInput: Sendable {
    package enum Method: String, Sendable, CaseIterable {
        case GET, HEAD, CONNECT, POST
    }

    package var bytes: [UInt8]
    /// Offsets where a read ends (sorted, inside the bytes).
    package var splits: [Int]
    package var method: Method
    package var upgradeRequested: Bool

    package init(bytes: [UInt8], splits: [Int] = [], method: Method = .GET, upgradeRequested: Bool = false) {
        self.bytes = bytes
        self.splits = splits.filter { $0 > 0 && $0 < bytes.count }.sorted()
        self.method = method
        self.upgradeRequested = upgradeRequested
    }

    /// The reads, in order.
    package var reads: [ArraySlice<UInt8>] {
        var out: [ArraySlice<UInt8>] = []
        var start = 0
        for split in splits where split > start {
            out.append(bytes[start..<split])
            start = split
        }
        out.append(bytes[start...])
        return out
    }

    /// A fuzzer's input: the first byte picks the request method (bits 0-1), whether it asked to
    /// upgrade (bit 2) and the split seed (bits 3-7); the rest is the stream.
    package init(fuzz data: [UInt8]) {
        guard let control = data.first else {
            self.init(bytes: [])
            return
        }
        let bytes = Array(data.dropFirst())
        var rng = SplitMix64(seed: UInt64(control >> 3))
        var splits: [Int] = []
        if control >> 3 != 0 && bytes.count > 1 {
            for _ in 0..<Int(control >> 3) % 6 + 1 { splits.append(1 + Int(rng.next() % UInt64(bytes.count - 1))) }
        }
        self.init(
            bytes: bytes, splits: splits, method: Method.allCases[Int(control & 3)], upgradeRequested: control & 4 != 0
        )
    }

    /// The fuzzer's encoding of this input without its splits (a corpus seed).
    package var fuzzEncoding: [UInt8] {
        let methodBits = UInt8(Method.allCases.firstIndex(of: method)!)
        return [methodBits | (upgradeRequested ? 4 : 0)] + bytes
    }
}

/// A small deterministic generator (SplitMix64): the same seed gives the same cases on every machine.
package struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    package init(seed: UInt64) { state = seed }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
