#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The process's open-file limit (RLIMIT_NOFILE), which bounds how many connections it can hold.
package enum OpenFileLimit {
    /// The soft limit now.
    package static func current() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        return limit.rlim_cur >= rlim_t(1 << 20) ? 1 << 20 : Int(limit.rlim_cur)
    }

    /// Raises the soft limit to the hard limit (at most 2^20), as servers commonly do at start;
    /// returns the soft limit in force afterwards.
    @discardableResult
    package static func raiseToHardLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return current() }
        let target = min(limit.rlim_max, rlim_t(1 << 20))
        if limit.rlim_cur < target {
            limit.rlim_cur = target
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return current()
    }
}
