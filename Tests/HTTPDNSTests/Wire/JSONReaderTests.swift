import Testing
@testable import HTTPDNS

/// The JSON reader that replaced JSONSerialization reads provider answers: attacker bytes.
@Suite struct JSONReaderTests {
    private func parse(_ text: String) throws(JSONReader.Failure) -> Any {
        try JSONReader.parse(Array(text.utf8))
    }

    private func failure(_ bytes: [UInt8]) -> JSONReader.Failure? {
        do {
            _ = try JSONReader.parse(bytes)
            return nil
        } catch {
            return error
        }
    }

    @Test func readsTheTreeTheWireParsersWalk() throws {
        let root = try #require(try parse(#" {"a": [1, -2, 3.5, 1e3, true, false, null, "x"], "b": {}} "#) as? [String: Any])
        let list = try #require(root["a"] as? [Any])
        #expect(list.count == 8)
        #expect(list[0] as? Int == 1)
        #expect(list[1] as? Int == -2)
        #expect(list[2] as? Double == 3.5)
        #expect(list[3] as? Double == 1000)
        #expect(list[4] as? Bool == true)
        #expect(list[5] as? Bool == false)
        #expect(list[6] is JSONNull)
        #expect(list[7] as? String == "x")
        #expect((root["b"] as? [String: Any])?.isEmpty == true)
        #expect((try parse("[]") as? [Any])?.isEmpty == true)
        #expect(try parse("\"top\"") as? String == "top")
    }

    @Test func decodesEscapesAndSurrogatePairs() throws {
        #expect(try parse(#""a\"b\\c\/d\b\f\n\r\t""#) as? String == "a\"b\\c/d\u{08}\u{0C}\n\r\t")
        #expect(try parse(#""\u00e9\u4e2d\ud83d\ude00""#) as? String == "é中😀")
        #expect(try parse("\"é中😀\"") as? String == "é中😀")
    }

    @Test func numbersBeyondIntBecomeDoublesAndBeyondDoubleAreErrors() throws {
        #expect(try parse("[9223372036854775807]") as? [Any] != nil)
        #expect((try parse("[9223372036854775808]") as? [Any])?.first is Double)
        #expect(failure(Array("[1e999]".utf8))?.problem == "a number out of range")
        #expect(JSONInput.int(9.0e15 + 2) == nil)
        #expect(JSONInput.int(60.0) == 60)
        #expect(JSONInput.int(60.5) == nil)
        #expect(JSONInput.int(true) == 1)
        #expect(JSONInput.int(" 60\t") == 60)
        #expect(JSONInput.int(JSONNull()) == nil)
    }

    @Test(arguments: [
        ("", "the document ends where a value should start", 1, 1),
        ("{\"a\": 1,, }", "expected a quoted key", 1, 9),
        ("{\n  \"a\" 1}", "expected ':' after a key", 2, 7),
        ("[1 2]", "expected ',' or ']' in an array", 1, 4),
        ("{\"a\": 1 \"b\"}", "expected ',' or '}' in an object", 1, 9),
        ("[01]", "a number cannot start with 0", 1, 4),
        ("[-]", "a number needs digits", 1, 3),
        ("[1.]", "a number needs digits after '.'", 1, 4),
        ("[1e]", "a number needs digits in its exponent", 1, 4),
        ("[tru]", "unexpected character where a value should start", 1, 2),
        ("[\"a\u{01}\"]", "a control character inside a string", 1, 4),
        ("[\"\\x\"]", "an unknown escape in a string", 1, 4),
        ("[\"\\u12\"]", "a \\u escape needs four hex digits", 1, 7),
        ("[\"\\ud800\"]", "a lone UTF-16 surrogate in a string", 1, 9),
        ("[\"\\udc00\"]", "a lone UTF-16 surrogate in a string", 1, 9),
        ("[\"abc", "the document ends inside a string", 1, 6),
        ("[1] x", "unexpected text after the value", 1, 5),
        ("{\"a\": [1, 2", "the document ends inside an array", 1, 12),
    ])
    func errorsSayWhatAndWhere(text: String, problem: String, line: Int, column: Int) {
        #expect(failure(Array(text.utf8)) == JSONReader.Failure(problem: problem, line: line, column: column))
    }

    @Test func invalidUTF8InAStringIsAnError() {
        #expect(failure([0x5B, 0x22, 0xFF, 0xFE, 0x22, 0x5D])?.problem == "a string that is not valid UTF-8")
        #expect(failure([0x5B, 0x22, 0xED, 0xA0, 0x80, 0x22, 0x5D])?.problem == "a string that is not valid UTF-8")
    }

    @Test func nestingIsBounded() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(failure(Array(deep.utf8))?.problem == "nested deeper than \(JSONReader.maximumDepth) levels")
        let fits = String(repeating: "[", count: JSONReader.maximumDepth) + String(repeating: "]", count: JSONReader.maximumDepth)
        #expect(failure(Array(fits.utf8)) == nil)
    }

    /// Every prefix of a real answer and every single-byte change of it: an answer or an error,
    /// never a trap (the test process would die).
    @Test func truncatedAndMutatedInputNeverTraps() {
        let answer = Array(#"{"Status":0,"Answer":[{"name":"a.example.","type":1,"TTL":60,"data":"192.0.2.1"}],"s":"\u00e9"}"#.utf8)
        for length in 0...answer.count {
            _ = failure(Array(answer[..<length]))
        }
        for index in answer.indices {
            for byte: UInt8 in [0x00, 0x22, 0x5C, 0x7B, 0x5D, 0x2C, 0x80, 0xFF] {
                var mutated = answer
                mutated[index] = byte
                _ = failure(mutated)
            }
        }
        #expect(failure(answer) == nil)
    }

    @Test func jsonInputKeepsItsTopLevelRule() {
        #expect(throws: WireError.malformedJSON("not valid JSON")) { try JSONInput.parse(Array("42".utf8)) }
        #expect(throws: WireError.malformedJSON("not valid JSON")) { try JSONInput.parse(Array("{".utf8)) }
        #expect(throws: WireError.malformedJSON("top level is not an object")) { try JSONInput.object(Array("[]".utf8)) }
    }
}
