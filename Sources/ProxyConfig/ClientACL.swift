/// The client address blocks allowed to use the proxy (`--allow-client`).
public enum ClientACL {
    /// squid's `localnet` convention plus loopback: loopback, RFC 1918, CGNAT (RFC 6598),
    /// link-local, and IPv6 unique-local and link-local. A proxy bound to 0.0.0.0 with this list
    /// serves its private network and nobody on a public address.
    public static let defaultBlocks: [CIDR] = [
        "127.0.0.0/8", "::1/128",
        "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",
        "100.64.0.0/10",
        "169.254.0.0/16", "fe80::/10",
        "fc00::/7",
    ].map { CIDR($0)! }

    public static let defaultText = defaultBlocks.map { "\($0)" }.joined(separator: ",")
}
