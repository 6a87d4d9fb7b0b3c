import Testing

@testable import ProxyKit

/// The `process_*` figures from /proc: the stat line's fields as proc(5) numbers them.
@Suite struct ProcessSampleTests {
    // A real line's shape; the command name holds a space and a ")" to prove fields are counted
    // from the last ")". utime 250, stime 50 (ticks), starttime 1000, vsize 52428800, rss 2560.
    static let stat =
        "4242 (http proxy)) S 1 4242 4242 0 -1 4194560 1200 0 0 0 250 50 0 0 20 0 3 0 1000 52428800 2560 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0\n"

    @Test func fieldsAreReadAfterTheCommandName() throws {
        let sample = try #require(
            ProcessSample.parse(
                stat: Self.stat, bootTime: 1_700_000_000, ticksPerSecond: 100, pageSize: 4096, openDescriptors: 12,
                maxDescriptors: 1024))
        #expect(sample.cpuSeconds == 3.0)
        #expect(sample.startTimeSeconds == 1_700_000_010)
        #expect(sample.virtualBytes == 52_428_800)
        #expect(sample.residentBytes == 2560 * 4096)
        #expect(sample.openDescriptors == 12 && sample.maxDescriptors == 1024)
    }

    @Test func aTruncatedLineIsNoSample() {
        #expect(ProcessSample.parse(stat: "4242 (x) S 1 2 3", bootTime: 0, ticksPerSecond: 100, pageSize: 4096, openDescriptors: 0, maxDescriptors: 0) == nil)
        #expect(ProcessSample.parse(stat: "garbage", bootTime: 0, ticksPerSecond: 100, pageSize: 4096, openDescriptors: 0, maxDescriptors: 0) == nil)
    }

    @Test func bootTimeComesFromBtime() {
        #expect(ProcessSample.bootTime("cpu  1 2 3\nintr 5\nbtime 1795900000\nprocesses 9\n") == 1_795_900_000)
        #expect(ProcessSample.bootTime("cpu  1 2 3\n") == nil)
    }

    /// This test process's own sample agrees with what the kernel says elsewhere.
    @Test func theCurrentProcessIsRead() throws {
        let sample = try #require(ProcessSample.current())
        #expect(sample.residentBytes > 1_048_576)
        #expect(sample.openDescriptors >= 3)
        #expect(sample.maxDescriptors >= sample.openDescriptors)
        #expect(sample.cpuSeconds > 0)
    }
}
