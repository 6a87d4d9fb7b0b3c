import NIOCore
import NIOEmbedded
import NIOHTTP1

import Testing

@testable import ProxyAdmin

/// The admin routes against a backend that offers only what a test gives it: each endpoint says
/// plainly what is not offered instead of failing.
@Suite struct AdminBackendTests {
    struct Backend: AdminBackend {
        var isDraining = false
        var metrics: String? = nil
        var offersReload = false

        var reloads: Bool { offersReload }
        func metricsText() -> String? { metrics }
        func reload() async -> (ok: Bool, message: String) { (true, "applied: nothing changed") }
    }

    static func respond(_ backend: Backend, _ path: String, method: HTTPMethod = .GET) async throws -> AdminRoutes.Response {
        let loop = NIOAsyncTestingEventLoop()
        defer { Task { await loop.shutdownGracefully() } }
        return try await AdminRoutes(backend: backend).respond(method: method, path: path, query: [:], on: loop).get()
    }

    @Test func nothingOfferedAnswersNotFoundWithTheReason() async throws {
        let backend = Backend()
        let metrics = try await Self.respond(backend, "/metrics")
        #expect(metrics.status == .notFound)
        #expect(metrics.body.contains("--metrics false"))
        #expect(try await Self.respond(backend, "/reload", method: .POST).status == .notFound)
        #expect(try await Self.respond(backend, "/audit").status == .notFound)
        #expect(try await Self.respond(backend, "/errors").status == .notFound)
        #expect(try await Self.respond(backend, "/summary").status == .notFound)
        #expect(try await Self.respond(backend, "/proxy.pac").status == .notFound)
        let stats = try await Self.respond(backend, "/stats")
        #expect(stats.status == .ok)
        #expect(stats.body.contains("\"domains\" : ["))
    }

    @Test func healthFollowsDrainingAndOfferedPartsAnswer() async throws {
        #expect(try await Self.respond(Backend(), "/healthz").body == "ok\n")
        let draining = try await Self.respond(Backend(isDraining: true), "/healthz")
        #expect(draining.status == .serviceUnavailable)
        #expect(draining.body == "draining\n")
        let metrics = try await Self.respond(Backend(metrics: "# HELP x\n"), "/metrics")
        #expect(metrics.status == .ok && metrics.body == "# HELP x\n")
        let reload = try await Self.respond(Backend(offersReload: true), "/reload", method: .POST)
        #expect(reload.status == .ok && reload.body == "applied: nothing changed\n")
    }
}
