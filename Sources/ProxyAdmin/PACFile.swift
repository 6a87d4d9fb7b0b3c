import ProxyConfig

/// The proxy auto-config file served at `/proxy.pac`: `FindProxyForURL` returns `PROXY host:port`
/// for everything except plain host names (no dot), loopback (`localhost`, 127.0.0.0/8, ::1) and
/// the `pac-bypass` rules, which go `DIRECT`. The rules mean what curl's `NO_PROXY` means: a domain
/// matches itself and every subdomain, an address block matches IP literals in it, `*` everything.
///
/// The script never calls `dnsResolve`, `isInNet` or `myIpAddress`: a PAC file that resolves names
/// would send every browsed host to the local resolver, the very thing the proxy avoids. CIDR rules
/// therefore match destinations written as IP literals only, compared in plain JavaScript.
/// Every value written into the script goes through `javaScriptString` (or is a number).
enum PACFile {
    static let contentType = "application/x-ns-proxy-autoconfig"

    static func render(proxy: HostPort, bypass: [DestinationPattern]) -> String {
        var everything = false
        var domains: [String] = []
        var ipv4Blocks: [String] = []
        var ipv6Blocks: [String] = []
        for rule in bypass {
            switch rule {
            case .everything:
                everything = true
            case .domain(let domain):
                domains.append(javaScriptString(domain))
            case .block(let block) where block.network.isIPv4:
                let value = block.network.bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                ipv4Blocks.append("[\(value), \(block.prefixLength)]")
            case .block(let block):
                var groups: [String] = []
                for index in stride(from: 0, to: 16, by: 2) {
                    groups.append(String(UInt16(block.network.bytes[index]) << 8 | UInt16(block.network.bytes[index + 1])))
                }
                ipv6Blocks.append("[[\(groups.joined(separator: ", "))], \(block.prefixLength)]")
            }
        }
        return """
            // httpdns-proxy PAC file: everything through the proxy, except plain host names, loopback
            // and the pac-bypass list. No name is ever resolved here.
            var PROXY = \(javaScriptString("PROXY " + proxy.description));
            var BYPASS_ALL = \(everything);
            var BYPASS_DOMAINS = [\(domains.joined(separator: ", "))];
            var BYPASS_IPV4 = [\(ipv4Blocks.joined(separator: ", "))];
            var BYPASS_IPV6 = [\(ipv6Blocks.joined(separator: ", "))];

            function pacIPv4(h) {
              var m = /^(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})$/.exec(h);
              if (!m) return null;
              var n = 0;
              for (var i = 1; i <= 4; i++) {
                var b = parseInt(m[i], 10);
                if (b > 255) return null;
                n = n * 256 + b;
              }
              return n;
            }

            function pacIPv6(h) {
              if (h.indexOf(":") < 0 || !/^[0-9a-f:.]+$/.test(h)) return null;
              var halves = h.split("::");
              if (halves.length > 2) return null;
              function groups(s) {
                if (s === "") return [];
                var out = [], items = s.split(":");
                for (var i = 0; i < items.length; i++) {
                  var item = items[i];
                  if (i === items.length - 1 && item.indexOf(".") >= 0) {
                    var v4 = pacIPv4(item);
                    if (v4 === null) return null;
                    out.push(Math.floor(v4 / 65536), v4 % 65536);
                  } else {
                    if (!/^[0-9a-f]{1,4}$/.test(item)) return null;
                    out.push(parseInt(item, 16));
                  }
                }
                return out;
              }
              var head = groups(halves[0]);
              var tail = halves.length === 2 ? groups(halves[1]) : [];
              if (head === null || tail === null) return null;
              var fill = 8 - head.length - tail.length;
              if (halves.length === 2 ? fill < 1 : fill !== 0) return null;
              for (var k = 0; k < fill; k++) head.push(0);
              return head.concat(tail);
            }

            function pacInIPv4(n, network, bits) {
              var size = Math.pow(2, 32 - bits);
              return Math.floor(n / size) === Math.floor(network / size);
            }

            function pacInIPv6(g, network, bits) {
              for (var i = 0; i < 8 && bits > 0; i++, bits -= 16) {
                var size = Math.pow(2, 16 - (bits >= 16 ? 16 : bits));
                if (Math.floor(g[i] / size) !== Math.floor(network[i] / size)) return false;
              }
              return true;
            }

            function FindProxyForURL(url, host) {
              var h = String(host).toLowerCase();
              if (h.charAt(0) === "[" && h.charAt(h.length - 1) === "]") h = h.substring(1, h.length - 1);
              while (h.length > 0 && h.charAt(h.length - 1) === ".") h = h.substring(0, h.length - 1);
              var v4 = pacIPv4(h);
              var v6 = v4 === null ? pacIPv6(h) : null;
              var i;
              if (v4 === null && v6 === null && h.indexOf(".") < 0) return "DIRECT";
              if (h === "localhost" || /\\.localhost$/.test(h)) return "DIRECT";
              if (v4 !== null && pacInIPv4(v4, 2130706432, 8)) return "DIRECT";
              if (v6 !== null && pacInIPv6(v6, [0, 0, 0, 0, 0, 0, 0, 1], 128)) return "DIRECT";
              if (BYPASS_ALL) return "DIRECT";
              // A domain: itself and every subdomain (names only, as in curl's NO_PROXY).
              for (i = 0; v4 === null && v6 === null && i < BYPASS_DOMAINS.length; i++) {
                var d = BYPASS_DOMAINS[i];
                if (h === d) return "DIRECT";
                if (h.length > d.length + 1 && h.substring(h.length - d.length - 1) === "." + d) return "DIRECT";
              }
              for (i = 0; v4 !== null && i < BYPASS_IPV4.length; i++) {
                if (pacInIPv4(v4, BYPASS_IPV4[i][0], BYPASS_IPV4[i][1])) return "DIRECT";
              }
              for (i = 0; v6 !== null && i < BYPASS_IPV6.length; i++) {
                if (pacInIPv6(v6, BYPASS_IPV6[i][0], BYPASS_IPV6[i][1])) return "DIRECT";
              }
              return PROXY;
            }

            """
    }

    /// A double-quoted JavaScript string literal for `text`. Quotes and backslashes are escaped;
    /// everything outside printable ASCII, and `<`, `>`, `&`, becomes `\uXXXX`, so the literal cannot
    /// end the string, the line, or an enclosing `<script>`.
    static func javaScriptString(_ text: String) -> String {
        var out = "\""
        for unit in text.utf16 {
            switch unit {
            case 0x22: out += "\\\""
            case 0x5C: out += "\\\\"
            case 0x20...0x7E where unit != 0x3C && unit != 0x3E && unit != 0x26 && unit != 0x27:
                out.unicodeScalars.append(Unicode.Scalar(UInt8(unit)))
            default:
                let hex = String(unit, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            }
        }
        return out + "\""
    }
}
