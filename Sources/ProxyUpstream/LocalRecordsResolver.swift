import NIOCore
import ProxyConfig
import ProxyKit

/// The hosts file in front of the configured resolver: a name the file gives is dialed at the
/// file's addresses (source `local`), synchronously, and never at an answer of any resolver; other
/// names go to `inner`. The DNS listener reads the same `LocalRecords`.
package struct LocalRecordsResolver: UpstreamResolver {
    /// A pooled connection dialed from the file is checked against it this often (a reload may
    /// have changed or removed the record).
    static let recheck = TimeAmount.seconds(1)

    package let records: LocalRecords
    package let inner: any UpstreamResolver

    package init(records: LocalRecords, inner: any UpstreamResolver) {
        self.records = records
        self.inner = inner
    }

    package func resolve(host: String, port: Int, on eventLoop: any EventLoop) -> EventLoopFuture<Resolution> {
        guard let found = records.addresses(of: host) else { return inner.resolve(host: host, port: port, on: eventLoop) }
        guard let resolution = Self.resolution(found, port: port) else {
            return eventLoop.makeFailedFuture(ProxyError(.resolveFailed, "cannot resolve \(host): the hosts file gives it no usable address"))
        }
        return eventLoop.makeSucceededFuture(resolution)
    }

    /// The file's addresses as a resolution (IPv6 first, as an HTTPDNS answer's); nil when none
    /// makes a socket address.
    static func resolution(_ found: HostsFile.Addresses, port: Int) -> Resolution? {
        var addresses: [SocketAddress] = []
        for ip in found.ipv6 + found.ipv4 {
            if let address = try? SocketAddress(ipAddress: ip, port: port) { addresses.append(address) }
        }
        return addresses.isEmpty ? nil : Resolution(addresses: addresses, source: .local, lifetime: .zero)
    }

    /// No fallback for the file's addresses: the file is the only answer for its names.
    package func fallback(after failed: Resolution, host: String, port: Int, reason: String, on eventLoop: any EventLoop) -> EventLoopFuture<Resolution>? {
        guard failed.source != .local else { return nil }
        return inner.fallback(after: failed, host: host, port: port, reason: reason, on: eventLoop)
    }

    /// A connection dialed from the file stays while the file still gives its address; one dialed
    /// from a resolver is retired once the file names its host.
    package func renewLease(host: String, ip: String, source: ResolutionSource, now: NIODeadline) -> ConnectionLease.Verdict {
        let found = records.addresses(of: host)
        guard source == .local else {
            if found != nil { return .retire(reason: "name now in the hosts file") }
            return inner.renewLease(host: host, ip: ip, source: source, now: now)
        }
        guard let found, let address = IPAddress(ip), found.holds(address.unmappedIPv4 ?? address) || found.holds(address) else {
            return .retire(reason: "address no longer in the hosts file")
        }
        return .renew(until: now + Self.recheck)
    }
}
