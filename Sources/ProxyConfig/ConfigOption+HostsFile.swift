/// `hosts-file`: local records for the proxy's dial path and the DNS listener.
extension ConfigOption {
    package static let hostsFile = pathOption(
        "hosts-file",
        help: "Hosts-format file (IP name [aliases...]) whose names the proxy dials and the DNS listener answers before HTTPDNS; read again on SIGHUP"
    ) { $0.hostsFile = $1 }
    .table(.resolver, .restart, \.hostsFile,
        example: "/etc/httpdns-proxy/hosts",
        doc: "Local records in hosts-file format (`IP name [aliases...]`, `#` comments, IPv4 and IPv6, several lines for one name add addresses), as dnsmasq's `addn-hosts` and CoreDNS's `hosts` plugin read them: a name in the file is dialed at the file's addresses (access log source `local`, no fallback) and the DNS listener answers its A and AAAA from the file (TTL 0, NODATA for a family or type the file does not give; query log source `local`), before HTTPDNS, forwarded zones and the upstream resolvers. A file that cannot be read, is larger than 8 MiB, holds more than 100000 name-address entries or has a bad line stops the start (exit 64, naming the line); SIGHUP and `POST /reload` read it again, and a bad file then keeps the previous records. See [Local records](#local-records).")
}
