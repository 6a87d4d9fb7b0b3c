#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Request times in a fixed set of buckets, each 10 % wider than the one before (0.1 ms up to
/// 60 s, then one overflow bucket): memory stays at `bucketCount` integers however many requests
/// are recorded, and a percentile read from it is at most 10 % above the true value.
package struct LatencyHistogram: Sendable, Equatable {
    static let firstBoundMs = 0.1
    static let growth = 1.1
    /// Buckets up to 60 s (the last bound ≥ 60 000 ms), plus the overflow bucket.
    static let bucketCount: Int = {
        var bound = firstBoundMs
        var count = 1
        while bound < 60_000 {
            bound *= growth
            count += 1
        }
        return count + 1
    }()
    /// The upper bound of each bucket but the overflow one, in ms.
    static let boundsMs: [Double] = (0..<(bucketCount - 1)).map { firstBoundMs * pow(growth, Double($0)) }

    private(set) var counts = [Int](repeating: 0, count: LatencyHistogram.bucketCount)
    private(set) var count = 0
    private(set) var maxMs = 0.0

    mutating func record(ms: Double) {
        let value = ms.isFinite ? max(0, ms) : 0
        counts[Self.bucket(of: value)] += 1
        count += 1
        maxMs = max(maxMs, value)
    }

    static func bucket(of ms: Double) -> Int {
        guard ms > firstBoundMs else { return 0 }
        // The first bound ≥ ms (computed, then corrected for rounding at the edges).
        var index = Int((log(ms / firstBoundMs) / log(growth)).rounded(.up))
        index = min(max(index, 0), boundsMs.count)
        while index > 0, index <= boundsMs.count, boundsMs[index - 1] >= ms { index -= 1 }
        while index < boundsMs.count, boundsMs[index] < ms { index += 1 }
        return index
    }

    /// The `q` quantile (0 < q ≤ 1) in ms: the upper bound of the bucket holding that rank, never
    /// above the largest time recorded; nil before the first request.
    func percentile(_ q: Double) -> Double? {
        guard count > 0 else { return nil }
        let rank = max(1, Int((q * Double(count)).rounded(.up)))
        var seen = 0
        for (index, n) in counts.enumerated() {
            seen += n
            if seen >= rank {
                return index < Self.boundsMs.count ? min(Self.boundsMs[index], maxMs) : maxMs
            }
        }
        return maxMs
    }

    static func + (a: LatencyHistogram, b: LatencyHistogram) -> LatencyHistogram {
        var sum = a
        for index in sum.counts.indices { sum.counts[index] += b.counts[index] }
        sum.count += b.count
        sum.maxMs = max(a.maxMs, b.maxMs)
        return sum
    }
}

