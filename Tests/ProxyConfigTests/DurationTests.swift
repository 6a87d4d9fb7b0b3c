import NIOCore
import Testing
@testable import ProxyConfig

@Suite struct DurationTests {
    @Test(arguments: [
        ("250ms", TimeAmount.milliseconds(250)),
        ("3s", .seconds(3)),
        ("1.5s", .milliseconds(1500)),
        ("5m", .minutes(5)),
        ("1h", .hours(1)),
        ("0.5", .milliseconds(500)),
        ("10", .seconds(10)),
        ("0.1s", .milliseconds(100)),
        ("1.25h", .minutes(75)),
        ("0.001ms", .nanoseconds(1000)),
        ("1.000000001s", .nanoseconds(1_000_000_001)),
        ("0.0000001s", .nanoseconds(100)),
        ("300s", .seconds(300)),
    ])
    func parses(text: String, expected: TimeAmount) throws {
        #expect(try TimeAmount(configDuration: text) == expected)
    }

    @Test(arguments: ["", "s", "ms", "abc", "-1s", "+1s", "1.s", ".5s", "1,5s", "1 s", "1e3", "1d", "1sec", "1.2.3s", "5M", "0x10"])
    func rejectsSyntax(text: String) {
        #expect(throws: ConfigurationError.malformedValue(reason: "expected a duration like 500ms, 3s, 1.5s, 5m or 1h (a bare number means seconds)")) {
            try TimeAmount(configDuration: text)
        }
    }

    @Test(arguments: ["0", "0s", "0.0ms", "0.0000000001s"])
    func rejectsZero(text: String) {
        #expect(throws: ConfigurationError.malformedValue(reason: "duration must be greater than zero")) {
            try TimeAmount(configDuration: text)
        }
    }

    @Test(arguments: ["999999999999h", "1234567890123s"])
    func rejectsHugeValues(text: String) {
        #expect(throws: ConfigurationError.malformedValue(reason: "duration is too long")) {
            try TimeAmount(configDuration: text)
        }
    }
}
