import NIOConcurrencyHelpers

/// Client sessions by "host:port", bounded, shared by every connection of one `TLSClientContext`.
struct TLSSessionCache: Sendable {
    private var sessions: [String: (session: SSLSession, generation: UInt64)] = [:]
    private var nextGeneration: UInt64 = 0
    let capacity: Int

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    var count: Int { self.sessions.count }

    func session(for key: String) -> SSLSession? {
        self.sessions[key]?.session
    }

    mutating func store(_ session: SSLSession, for key: String) {
        self.nextGeneration &+= 1
        self.sessions[key] = (session, self.nextGeneration)
        if self.sessions.count > self.capacity,
            let oldest = self.sessions.min(by: { $0.value.generation < $1.value.generation })?.key
        {
            self.sessions[oldest] = nil
        }
    }

    mutating func removeSession(for key: String) {
        self.sessions[key] = nil
    }
}
