/// One HTTP request for `CurlTransport`. Plain values only, so callers never see libcurl types.
public struct CurlRequest: Sendable {
    public enum Method: String, Sendable {
        case get = "GET"
        case post = "POST"
    }

    /// Absolute `http://` or `https://` URL, e.g. "https://dns.alidns.com/resolve?name=x&type=1".
    public var url: String
    public var method: Method = .get
    /// Extra request headers, sent in this order. Names and values must not contain CR, LF or NUL.
    public var headers: [(name: String, value: String)] = []
    /// Request body; sent only for `.post`.
    public var body: [UInt8] = []
    /// IPs the URL's host is pinned to (CURLOPT_RESOLVE "host:port:ip1,ip2,..."; IPv6 in brackets),
    /// tried in this order by libcurl; empty = normal DNS. TLS SNI and certificate checks keep the URL's host.
    ///
    /// Pins live in the transport's shared DNS cache, keyed by host and port: the latest request's
    /// pin list for a host:port wins, and later unpinned requests to that host:port use it too.
    public var pinnedAddresses: [String] = []
    /// Limit for the whole request, connection set-up and queueing for a free connection included.
    public var timeout: Duration = .seconds(3)
    /// Limit for connecting (TCP + TLS) only; nil = libcurl's default, capped by `timeout`.
    public var connectTimeout: Duration? = nil
    /// CA bundle (PEM) for a private resolver CA (CURLOPT_CAINFO); nil = the system store.
    public var caFile: String? = nil
    /// With `caFile` nil: the system store as a hashed directory (CURLOPT_CAPATH, no bundle file),
    /// its anchors read as chains need them. nil = libcurl's built-in directory when it is hashed,
    /// else libcurl's bundle.
    public var caDirectory: String? = nil
    /// The transfer is aborted with `.tooLarge` once the body would exceed this many bytes.
    public var maxResponseBytes: Int = 1 << 20
    /// Connect to exactly this IP for the URL's host and port (CURLOPT_CONNECT_TO), keeping the URL's
    /// host for Host, SNI and certificate checks. Unlike `pinnedAddresses`, libcurl keys connection
    /// reuse on this address, so a request aimed at one server never rides a cached connection to
    /// another (what per-server failover needs).
    public var connectAddress: String? = nil

    public init(url: String) {
        self.url = url
    }
}
