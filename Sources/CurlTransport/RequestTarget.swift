import CCurl

/// The parts of a request URL the transport needs: where to pin, and what may appear in errors.
struct RequestTarget: Sendable {
    var scheme: String
    /// As libcurl reports it (IPv6 literals keep their brackets).
    var host: String
    var port: Int
    var path: String
    /// Query string, its values and userinfo: text that must never reach an error message.
    private var secrets: [String]

    /// Parses `url`, accepting only absolute http(s) URLs.
    init(url: String) throws(CurlTransportError) {
        guard let parsed = CurlURLHandle(url) else {
            throw CurlTransportError(kind: .invalidRequest, detail: "unparsable URL")
        }
        guard let scheme = parsed.part(CURLUPART_SCHEME)?.lowercased(), scheme == "http" || scheme == "https"
        else {
            throw CurlTransportError(kind: .invalidRequest, detail: "URL scheme must be http or https")
        }
        guard let host = parsed.part(CURLUPART_HOST), !host.isEmpty,
            let portText = parsed.part(CURLUPART_PORT, defaultPort: true), let port = Int(portText)
        else {
            throw CurlTransportError(kind: .invalidRequest, detail: "URL has no host")
        }
        self.scheme = scheme
        self.host = host
        self.port = port
        self.path = parsed.part(CURLUPART_PATH) ?? "/"

        // Whole pairs ("key=K") always; bare values only when long enough that removing them
        // cannot mangle ordinary words and numbers of the message (ports, "type=1").
        var secrets: [String] = [url]
        if let query = parsed.part(CURLUPART_QUERY), !query.isEmpty {
            secrets.append(query)
            for pair in query.split(separator: "&") where !pair.isEmpty {
                secrets.append(String(pair))
                if let equals = pair.firstIndex(of: "=") {
                    let value = pair[pair.index(after: equals)...]
                    if value.count >= Self.minimumBareSecretLength { secrets.append(String(value)) }
                }
            }
        }
        let user = parsed.part(CURLUPART_USER) ?? ""
        let password = parsed.part(CURLUPART_PASSWORD) ?? ""
        if !user.isEmpty || !password.isEmpty {
            secrets.append(password.isEmpty ? "\(user)@" : "\(user):\(password)")
            if password.count >= Self.minimumBareSecretLength { secrets.append(password) }
        }
        // Longest first, so a text that contains a shorter secret is removed whole.
        self.secrets = secrets.sorted { $0.count > $1.count }
    }

    private static let minimumBareSecretLength = 6

    /// Scheme, host, port and path: safe to log.
    var redactedURL: String { "\(scheme)://\(host):\(port)\(path)" }

    /// Removes anything secret from text libcurl produced (its error buffer) before it is shown.
    func redact(_ text: String) -> String {
        var result = text
        for secret in secrets where result.contains(secret) {
            result = result.replacing(secret, with: "<redacted>")
        }
        return result
    }
}
