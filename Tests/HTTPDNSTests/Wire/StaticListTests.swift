import Testing
@testable import HTTPDNS

@Suite struct StaticListTests {
    private func parse(_ text: String) throws -> StaticListDocument {
        try StaticList.parse(Array(text.utf8))
    }

    @Test func parsesTheDocumentedExample() throws {
        let body = #"{"service":"shenzhen-mobile","enable":1,"#
            + #""domainlist":[{"domain":"a.test.com","ips":["222.66.22.111","222.66.22.102"]},{"domain":"b.test.com","ips":["202.29.13.214"]}]}"#
        #expect(try parse(body) == StaticListDocument(service: "shenzhen-mobile", enabled: true, entries: [
            "a.test.com": .init(ipv4: ["222.66.22.111", "222.66.22.102"]),
            "b.test.com": .init(ipv4: ["202.29.13.214"]),
        ]))
    }

    @Test(arguments: [
        (#"{"enable":0}"#, false), (#"{"enable":1}"#, true), (#"{}"#, true),
        (#"{"enable":false}"#, false), (#"{"enable":true}"#, true), (#"{"enable":"0"}"#, false),
    ])
    func enableFlag(body: String, enabled: Bool) throws {
        #expect(try parse(body).enabled == enabled)
    }

    @Test func mergesNormalisesAndSkips() throws {
        let body = #"{"domainlist":[{"domain":"A.Test.COM.","ips":["1.2.3.4","2400:0::1","nope"]},"#
            + #"{"domain":"a.test.com","ips":["1.2.3.4","5.6.7.8"]},{"domain":"bad domain","ips":["1.1.1.1"]},"#
            + #"{"domain":"empty.com","ips":["x"]},{"ips":["2.2.2.2"]},"junk",{"domain":"v6.com","ipsv6":["2400::2"]}],"x":1}"#
        #expect(try parse(body) == StaticListDocument(service: nil, enabled: true, entries: [
            "a.test.com": .init(ipv4: ["1.2.3.4", "5.6.7.8"], ipv6: ["2400::1"]),
            "v6.com": .init(ipv6: ["2400::2"]),
        ]))
    }

    @Test func malformedDocuments() {
        for body in ["", "[]", "{", #"{"domainlist":{}}"#, #"{"enable":"yes"}"#] {
            #expect(throws: WireError.self, "\(body)") { try parse(body) }
        }
    }
}

@Suite struct StaticListProblemTests {
    @Test func skippedEntriesAreReportedWithTheirLines() throws {
        let text = """
            {"domainlist": [
              {"domain": "a.test", "ips": ["192.0.2.1"]},
              {"domain": "b.test", "ips": ["192.0.2.300", "192.0.2.2"]},
              {"domain": "bad..name", "ips": ["192.0.2.3"]},
              {"ips": ["192.0.2.4"]},
              "junk",
              {"domain": "empty.test", "ips": []}
            ]}
            """
        let (document, problems) = try StaticList.parseReporting(Array(text.utf8))
        #expect(document.entries.keys.sorted() == ["a.test", "b.test"])
        #expect(problems.map(\.line) == [3, 4, 5, 6, 7])
        #expect(problems.map(\.entry) == [2, 3, 4, 5, 6])
        #expect(problems[0].reason.contains("'192.0.2.300' of b.test is not an IP address"))
        #expect(problems[1].reason.contains("'bad..name' is not a valid host name"))
        #expect(problems[2].reason.contains("no \"domain\""))
        #expect(problems[4].reason.contains("empty.test has no addresses"))
    }

    @Test func aSyntaxErrorSaysTheLineAndColumn() {
        let text = "{\"domainlist\": [\n  {\"domain\": \"a.test\",, }\n]}\n"
        #expect {
            try StaticList.parse(Array(text.utf8))
        } throws: { error in
            "\(error)".contains("line 2, column")
        }
    }
}
