#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import NIOCore

/// A listener that could not open its address: which one, where, why, and what to do about it.
/// The executable reports it as a configuration error (exit 64) in the configured log format.
package struct ListenerBindError: Error, Sendable, CustomStringConvertible {
    /// `proxy` or `admin`.
    package var listener: String
    /// The option that sets the address (`--listen`, `--admin-listen`).
    package var option: String
    /// host:port as configured.
    package var address: String
    /// errno of bind(2) or listen(2), when the failure was one.
    package var errnoCode: Int32?
    /// The underlying error's text.
    package var underlying: String

    package init(listener: String, option: String, host: String, port: Int, error: any Error) {
        self.listener = listener
        self.option = option
        self.address = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        self.errnoCode = (error as? IOError)?.errnoCode
        self.underlying = "\(error)"
    }

    /// The cause in words.
    package var reason: String {
        switch errnoCode {
        case EADDRINUSE?: "address already in use"
        case EACCES?: "permission denied"
        case EADDRNOTAVAIL?: "address not available on this host"
        default: underlying
        }
    }

    /// What the operator can do.
    package var hint: String {
        let port = address.split(separator: ":").last.map(String.init) ?? "PORT"
        switch errnoCode {
        case EADDRINUSE?:
            return "another process (or another httpdns-proxy) already listens there: find it with `ss -ltnp 'sport = :\(port)'`, stop it, or choose another port with \(option)"
        case EACCES?:
            return "ports below 1024 need root or CAP_NET_BIND_SERVICE: use a port above 1023 with \(option), or grant the capability"
        case EADDRNOTAVAIL?:
            return "no interface of this host has that IP address: use one it has (see `ip addr`), 0.0.0.0 for all, or 127.0.0.1, with \(option)"
        default:
            return "check \(option)"
        }
    }

    package var description: String {
        "cannot open the \(listener) listener on \(address) (\(option)): \(reason); \(hint)"
    }
}
