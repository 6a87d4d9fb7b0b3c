import CurlTransport

extension ResolverClient.Verdict {
    /// What a DoH service's HTTP response means: 5xx, 429 and SERVFAIL ask the next server; the
    /// statuses in `authStatuses` are credential problems (reported once); anything else is final.
    static func doh(
        _ response: CurlResponse,
        service: String,
        authStatuses: Set<Int> = [],
        parse: ([UInt8]) throws -> WireAnswer
    ) -> Self {
        guard response.status == 200 else {
            if response.status >= 500 || response.status == 429 { return .nextServer("HTTP \(response.status)") }
            if authStatuses.contains(response.status) {
                return .fail(ResolveFailure(kind: .auth, message: "\(service) refused the request (HTTP \(response.status))", negativeTTL: nil))
            }
            return .fail(ResolveFailure(kind: .server, message: "\(service) answered HTTP \(response.status)", negativeTTL: nil))
        }
        do {
            switch try parse(response.body).resolved() {
            case .success(let answer): return .answer(answer)
            case .failure(let failure): return .fail(failure)
            }
        } catch {
            if (error as? WireError)?.shortDescription == "servfail" { return .nextServer("\(error)") }
            return .fail(ResolveFailure(kind: .malformed, message: "\(error)", negativeTTL: nil))
        }
    }
}
