@testable import ProxyKit
import Testing

@Suite struct TrafficTallyTests {
    @Test func percentilesAreWithinTenPercentOfTheTrueValue() {
        var histogram = LatencyHistogram()
        // 1 … 1000 ms: the true p50 is 500, p90 900, p99 990.
        for ms in 1...1000 { histogram.record(ms: Double(ms)) }
        #expect(histogram.count == 1000 && histogram.maxMs == 1000)
        for (q, truth) in [(0.5, 500.0), (0.9, 900.0), (0.99, 990.0)] {
            let value = histogram.percentile(q)!
            #expect(value >= truth && value <= truth * 1.1, "p\(Int(q * 100)) = \(value), true \(truth)")
        }
        #expect(histogram.percentile(1) == 1000)
        #expect(LatencyHistogram().percentile(0.5) == nil)
    }

    @Test func memoryIsBoundedAndExtremesLand() {
        var histogram = LatencyHistogram()
        for _ in 0..<100_000 { histogram.record(ms: 0.01) }
        histogram.record(ms: 3_600_000)  // an hour: the overflow bucket
        histogram.record(ms: -.infinity)
        #expect(histogram.counts.count == LatencyHistogram.bucketCount && LatencyHistogram.bucketCount < 200)
        #expect(histogram.percentile(0.5) == LatencyHistogram.firstBoundMs, "the first bucket's bound")
        #expect(histogram.percentile(1) == 3_600_000)
        // Every bound lands in its own bucket, a hair above in the next.
        for (index, bound) in LatencyHistogram.boundsMs.enumerated() {
            #expect(LatencyHistogram.bucket(of: bound) == index)
            #expect(LatencyHistogram.bucket(of: bound * 1.000001) == index + 1)
        }
    }

    static func record(_ status: Int, kind: AccessLogRecord.Kind = .request, ms: Double = 5, error: String? = nil) -> AccessLogRecord {
        var record = AccessLogRecord(kind: kind, client: "127.0.0.1:1", method: kind == .tunnel ? "CONNECT" : "GET")
        record.status = status
        record.totalMs = ms
        record.bytesUp = 10
        record.bytesDown = 100
        record.errorReason = error
        return record
    }

    @Test func classesBytesAndWhatIsTimed() {
        var tally = TrafficTally()
        tally.add(Self.record(200))
        tally.add(Self.record(304))
        tally.add(Self.record(404))
        tally.add(Self.record(502, error: "connect_failed"))
        tally.add(Self.record(101, ms: 60_000))  // an upgrade: 2xx, not timed
        tally.add(Self.record(200, kind: .tunnel, ms: 90_000))  // a tunnel: counted, not timed
        tally.add(Self.record(0, error: "client_closed"))
        tally.add(Self.record(503, error: "too_many_connections"))  // refused at accept: no request
        #expect(tally.statusClasses == [3, 1, 1, 1])
        #expect(tally.noAnswer == 1)
        #expect(tally.bytesUp == 70 && tally.bytesDown == 700)
        #expect(tally.latency.count == 4 && tally.latency.maxMs == 5)
        let sum = tally + tally
        #expect(sum.statusClasses == [6, 2, 2, 2] && sum.latency.count == 8 && sum.bytesDown == 1400)
        let requests = AdminSummary.requests(tally)
        #expect(requests.byClass == ["2xx": 3, "3xx": 1, "4xx": 1, "5xx": 1] && requests.total == 6)
    }
}
