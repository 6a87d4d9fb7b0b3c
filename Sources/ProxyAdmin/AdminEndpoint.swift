import NIOHTTP1

/// One path the admin listener routes and the methods it takes. `AdminEndpoint.all` is the one list:
/// the router's 405 (`Allow`) and 404 (every endpoint) answers read it, and a test checks that
/// docs/operations.md documents exactly these.
package struct AdminEndpoint: Sendable, Equatable {
    package var path: String
    /// The methods it answers (HEAD wherever GET is, for the page, `/healthz` and the PAC file).
    package var methods: [HTTPMethod]
    /// How to call it, for the 404's list: "GET /resolve?host=NAME".
    package var usage: String

    package static let all: [AdminEndpoint] = [
        .init(path: "/", methods: [.GET, .HEAD], usage: "GET /"),
        .init(path: "/summary", methods: [.GET], usage: "GET /summary"),
        .init(path: "/healthz", methods: [.GET, .HEAD], usage: "GET /healthz"),
        .init(path: "/metrics", methods: [.GET], usage: "GET /metrics"),
        .init(path: "/stats", methods: [.GET], usage: "GET /stats"),
        .init(path: "/errors", methods: [.GET], usage: "GET /errors"),
        .init(path: "/cache", methods: [.GET, .DELETE], usage: "GET /cache, DELETE /cache?host=NAME"),
        .init(path: "/cache/purge", methods: [.POST], usage: "POST /cache/purge?host=NAME"),
        .init(path: "/resolve", methods: [.GET], usage: "GET /resolve?host=NAME"),
        .init(path: "/health/ips", methods: [.GET], usage: "GET /health/ips"),
        .init(path: "/audit", methods: [.GET], usage: "GET /audit"),
        .init(path: "/proxy.pac", methods: [.GET, .HEAD], usage: "GET /proxy.pac"),
        .init(path: "/reload", methods: [.POST], usage: "POST /reload"),
    ]

    /// The endpoint at `path`, if any.
    static func named(_ path: String) -> AdminEndpoint? {
        all.first { $0.path == path }
    }

    /// The `Allow` header value: "GET, HEAD".
    var allow: String {
        methods.map(\.rawValue).joined(separator: ", ")
    }

    /// The 405 body: which method to use, with a curl line for the ones that change something.
    var methodNotAllowed: String {
        switch path {
        case "/reload": "use POST /reload (curl -X POST http://ADMIN/reload): a reload changes the running proxy, so GET does not"
        case "/cache": "use GET, or DELETE /cache?host=NAME to purge"
        case "/cache/purge": "use POST /cache/purge?host=NAME (or DELETE /cache?host=NAME)"
        default: "use " + methods.map(\.rawValue).joined(separator: " or ")
        }
    }

    /// The 404 body: the path asked for and every endpoint, one a line.
    static func notFound(_ path: String) -> String {
        "not found: \(path.prefix(100))\nthe admin endpoints are:\n" + all.map { "  " + $0.usage }.joined(separator: "\n")
    }
}
