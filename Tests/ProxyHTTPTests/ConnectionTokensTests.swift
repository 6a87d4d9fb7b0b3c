import Testing

@testable import ProxyHTTP

/// The list scan and the Connection token set the rewriter decides hop-by-hop fields with.
@Suite struct ConnectionTokensTests {
    private func elements(_ value: String) -> [String] {
        var out: [String] = []
        ASCII.forEachListElement(value) { out.append($0) }
        return out
    }

    @Test func listElementsAreTrimmedLowercasedAndEmptyOnesSkipped() {
        #expect(elements("Keep-Alive") == ["keep-alive"])
        #expect(elements(" close ,\tUpgrade\t, , ,x-Foo") == ["close", "upgrade", "x-foo"])
        #expect(elements("") == [])
        #expect(elements(",,, \t ,") == [])
        #expect(elements("a,b") == ["a", "b"])
        #expect(elements("gzip, chunked") == ["gzip", "chunked"])
        #expect(elements("trailers;q=0.5") == ["trailers;q=0.5"])
    }

    @Test func nonASCIIElementsKeepTheirOldCaseMapping() {
        // No ASCII capital: as sent. An ASCII capital beside non-ASCII: Unicode lower-casing (as
        // the String-index scan did).
        #expect(elements("cafÉ") == ["cafÉ"])
        #expect(elements("CAFÉ") == ["café"])
    }

    @Test func commonTokensAreFlagsAndNameTheirFields() {
        var tokens = ConnectionTokens()
        for token in ["close", "keep-alive", "upgrade"] { tokens.insert(token) }
        #expect(tokens.close && tokens.keepAlive && tokens.upgrade)
        #expect(tokens.contains("close") && tokens.contains("keep-alive") && tokens.contains("upgrade"))
        #expect(tokens.names(field: "Close"))
        #expect(tokens.names(field: "KEEP-ALIVE"))
        #expect(tokens.names(field: "Upgrade"))
        #expect(!tokens.names(field: "x-other"))
        #expect(!ConnectionTokens().names(field: "close"))
        #expect(!ConnectionTokens().contains("upgrade"))
    }

    @Test func otherTokensNameFieldsInAnyCaseBeforeAndAfterTheSetTakesOver() {
        var tokens = ConnectionTokens()
        tokens.insert("x-a")
        tokens.insert("x-a")
        #expect(tokens.names(field: "X-A"))
        #expect(!tokens.names(field: "x-b"))
        for i in 0..<(ConnectionTokens.listLimit + 5) { tokens.insert("x-\(i)") }
        #expect(tokens.names(field: "X-A"))
        #expect(tokens.contains("x-0"))
        for i in 0..<(ConnectionTokens.listLimit + 5) { #expect(tokens.names(field: "X-\(i)")) }
        #expect(!tokens.names(field: "x-\(ConnectionTokens.listLimit + 5)"))
        #expect(!tokens.names(field: "close"))
    }

    @Test func nonASCIITokensNameNoFieldWhateverTheirNumber() {
        // U+1FEF is canonically equivalent to "`": a set lookup would match "x`y", a byte
        // comparison would not. Such a token names no field, with 5 tokens or with 12.
        for others in [4, 11] {
            var tokens = ConnectionTokens()
            for i in 0..<others { tokens.insert("t\(i)") }
            tokens.insert("x\u{1FEF}y")
            #expect(!tokens.names(field: "x`y"), "\(others) other tokens")
            #expect(!tokens.contains("x\u{1FEF}y"))
            #expect(tokens.names(field: "T0"))
        }
    }
}
