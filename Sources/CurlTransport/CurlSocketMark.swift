import Synchronization

/// The netfilter mark (SO_MARK) put on every resolver connection (`--outbound-mark`), so the
/// proxy's own HTTPDNS queries are never redirected back to it; 0: none. Process-wide, set once
/// at start before the first transfer.
public enum CurlSocketMark {
    public static let value = Atomic<UInt32>(0)

    public static func set(_ mark: UInt32?) {
        value.store(mark ?? 0, ordering: .relaxed)
    }
}
