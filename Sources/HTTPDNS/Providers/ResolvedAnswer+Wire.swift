extension WireAnswer {
    /// Turns a parsed answer into what the cache stores, or the failure to cache negatively.
    func resolved(defaultTTL: Int = 60) -> Result<ResolvedAnswer, ResolveFailure> {
        switch outcome {
        case .addresses where !ipv4.isEmpty || !ipv6.isEmpty:
            return .success(ResolvedAnswer(ipv4: ipv4, ipv6: ipv6, ttl: .seconds(ttl ?? defaultTTL), serverIP: nil))
        case .addresses, .noData:
            return .failure(ResolveFailure(kind: .noData, message: "no addresses", negativeTTL: ttl.map { .seconds($0) }))
        case .nxdomain:
            return .failure(ResolveFailure(kind: .nxdomain, message: "no such domain (NXDOMAIN)", negativeTTL: ttl.map { .seconds($0) }))
        }
    }
}

extension ResolvedAnswer {
    /// Combines separate A and AAAA answers; the shorter TTL wins so neither family goes stale.
    static func merge(_ v4: ResolvedAnswer?, _ v6: ResolvedAnswer?) -> ResolvedAnswer? {
        switch (v4, v6) {
        case (nil, nil): return nil
        case (let a?, nil): return a
        case (nil, let b?): return b
        case (let a?, let b?):
            return ResolvedAnswer(ipv4: a.ipv4, ipv6: b.ipv6, ttl: min(a.ttl, b.ttl), serverIP: a.serverIP ?? b.serverIP)
        }
    }
}
