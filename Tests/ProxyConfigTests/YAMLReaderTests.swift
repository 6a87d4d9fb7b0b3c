import Testing
@testable import ProxyConfig

/// The config file through libyaml's events (YAMLReader), in place of Yams.
@Suite struct YAMLReaderTests {
    private func failure(_ text: String) -> String? {
        do {
            _ = try YAMLReader.compose(text)
            return nil
        } catch {
            return error.description
        }
    }

    @Test func composesScalarsListsAndMappingsWithPositions() throws {
        let root = try #require(try YAMLReader.compose("listen: 127.0.0.1:1\nconnect-ports: [443, '8443']\nspki-pins:\n  a.example: x\n"))
        guard case .mapping(let pairs, let mark) = root else { Issue.record("not a mapping: \(root)"); return }
        #expect(mark == YAMLMark(line: 1, column: 1))
        #expect(pairs.count == 3)
        guard case .scalar(let key) = pairs[1].key, case .sequence(let items, _) = pairs[1].value else {
            Issue.record("unexpected \(pairs[1])")
            return
        }
        #expect(key.string == "connect-ports" && key.mark == YAMLMark(line: 2, column: 1))
        let texts = items.compactMap { item -> String? in if case .scalar(let scalar) = item { scalar.string } else { nil } }
        #expect(texts == ["443", "8443"])
        if case .scalar(let quoted) = items[1] { #expect(!quoted.isPlain) }
        guard case .mapping(let nested, _) = pairs[2].value else { Issue.record("not nested"); return }
        #expect(nested.count == 1)
    }

    @Test func emptyStreamsAndNulls() throws {
        #expect(try YAMLReader.compose("") == nil)
        #expect(try YAMLReader.compose("# only a comment\n") == nil)
        for null in ["~", "null", "Null", "NULL"] {
            #expect(try YAMLReader.compose(null)?.isNull == true, "\(null)")
        }
        #expect(try YAMLReader.compose("''")?.isNull == false, "a quoted empty string is a value")
        #expect(try YAMLReader.compose("'null'")?.isNull == false)
    }

    @Test func aliasesResolveToTheirAnchor() throws {
        let root = try #require(try YAMLReader.compose("a: &ports [443, 8443]\nb: *ports\n"))
        guard case .mapping(let pairs, _) = root, case .sequence(let items, _) = pairs[1].value else {
            Issue.record("unexpected \(root)")
            return
        }
        #expect(items.count == 2)
        #expect(failure("a: *missing\n") == "not valid YAML: alias '*missing' names no anchor before it at line 1, column 4")
        #expect(failure("a: &self [*self]\n") == "not valid YAML: alias '*self' names no anchor before it at line 1, column 11")
    }

    @Test func errorsNameTheProblemAndPositionButNotTheText() {
        let unclosed = failure("via: ok\nlisten: [127.0.0.1:1\n")
        #expect(unclosed?.hasPrefix("not valid YAML: ") == true)
        #expect(unclosed?.contains("line 3") == true, "\(unclosed ?? "")")
        #expect(unclosed?.contains("127.0.0.1") == false)
        #expect(failure("a: b\n\tc: d\n")?.contains("line 2, column 1") == true, "\(failure("a: b\n\tc: d\n") ?? "")")
        #expect(failure("a: 1\n---\nb: 2\n") == "not valid YAML: a second document starts at line 2, column 1; the config file is one document")
        #expect(failure("via: a\nvia: b\n") == "key 'via' appears more than once (lines 1 and 2)")
        #expect(failure("spki-pins:\n  x: 1\n  x: 2\n") == "key 'x' appears more than once (lines 2 and 3)")
    }

    @Test func nestingIsBounded() {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(failure(deep) == "not valid YAML: nested deeper than \(YAMLReader.maximumDepth) levels at line 1, column \(YAMLReader.maximumDepth + 1)")
    }

    /// Every prefix of a config and every one-byte change of it: a document or an error, never a trap.
    @Test func truncatedAndMutatedInputNeverTraps() {
        let text = Array("listen: 127.0.0.1:1\nconnect-ports: [443, \"8443\"]\nspki-pins:\n  a.example: &p [x, y]\n  b.example: *p\n".utf8)
        for length in 0...text.count {
            _ = failure(String(decoding: text[..<length], as: UTF8.self))
        }
        for index in text.indices {
            for byte: UInt8 in [0x00, 0x09, 0x0A, 0x22, 0x26, 0x2A, 0x3A, 0x5B, 0x7B, 0x7C, 0x3E] {
                var mutated = text
                mutated[index] = byte
                _ = failure(String(decoding: mutated, as: UTF8.self))
            }
        }
        #expect(failure(String(decoding: text, as: UTF8.self)) == nil)
    }

    @Test func theLoaderReportsReaderErrorsAsMalformedFiles() {
        #expect(loadError(flags: ["config": ["p.yaml"]], files: ["p.yaml": "a: 1\n---\nb: 2\n"])
            == .malformedFile(path: "p.yaml", reason: "not valid YAML: a second document starts at line 2, column 1; the config file is one document"))
        #expect(loadError(flags: ["config": ["p.yaml"]], files: ["p.yaml": "~"]) == nil)
        #expect(loadError(flags: ["config": ["p.yaml"]], files: ["p.yaml": "via: &v a\nlisten: *v\n"])?.description.contains("--listen") == true)
    }
}
