import Testing
@testable import HTTPDNS

@Suite struct WireErrorTests {
    @Test func shortDescriptionsAreLabelSafe() {
        let errors: [WireError] = [
            .malformedJSON("x y"), .malformedMessage("a\nb"), .truncated, .notAResponse,
            .idMismatch(expected: 1, received: 2), .rcode(2), .rcode(12345), .rcode(-1),
            .cnameChain("loop"), .invalidName("n"), .invalidBatch("b"), .providerError(code: "Weird Code\n"),
        ]
        for error in errors {
            let label = error.shortDescription
            #expect(!label.isEmpty)
            #expect(label.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x5F }, "\(label)")
            #expect(!error.description.isEmpty)
        }
        #expect(WireError.rcode(2).shortDescription == "servfail")
        #expect(WireError.rcode(2).description.contains("rcode 2"))
        #expect(WireError.rcode(12345).shortDescription == "rcode_other")
        #expect(WireError.truncated.shortDescription == "truncated")
    }
}
