import NetworkWatch
import ProxyChecks
import ProxyKit
import ProxyUpstream

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HTTPDNS
import NIOCore
import NIOHTTP1

/// What each admin path answers. Responses are JSON except `/healthz` (plain text for probes), the
/// page at `/` and the PAC file.
struct AdminRoutes: Sendable {
    struct Response: Sendable {
        var status: HTTPResponseStatus
        var contentType: String
        var body: String
        /// Added to the response head (e.g. a 405's `Allow`).
        var headers: [(String, String)] = []

        static func text(_ status: HTTPResponseStatus, _ body: String) -> Response {
            Response(status: status, contentType: "text/plain; charset=utf-8", body: body + "\n")
        }

        static func json<T: Encodable>(_ value: T) -> Response {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            let body = (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
            return Response(status: .ok, contentType: "application/json", body: body + "\n")
        }
    }

    let backend: any AdminBackend

    func respond(
        method: HTTPMethod, path: String, query: [String: String], requestHost: String? = nil, on eventLoop: any EventLoop
    ) -> EventLoopFuture<Response> {
        switch (method, path) {
        case (.GET, "/"), (.HEAD, "/"):
            return eventLoop.makeSucceededFuture(Response(status: .ok, contentType: AdminPage.contentType, body: AdminPage.html))
        case (.GET, "/proxy.pac"), (.HEAD, "/proxy.pac"):
            return eventLoop.makeSucceededFuture(pacFile(requestHost: requestHost))
        case (.GET, "/healthz"), (.HEAD, "/healthz"):
            return eventLoop.makeSucceededFuture(backend.isDraining ? .text(.serviceUnavailable, "draining") : .text(.ok, "ok"))
        case (.POST, "/reload"):
            guard backend.reloads else { return eventLoop.makeSucceededFuture(.text(.notFound, "reload is not available here")) }
            let backend = self.backend
            let answer = eventLoop.makePromise(of: Response.self)
            answer.completeWithTask {
                let outcome = await backend.reload()
                return .text(outcome.ok ? .ok : .unprocessableEntity, outcome.message)
            }
            return answer.futureResult
        case (.GET, "/metrics"):
            guard let metricsText = backend.metricsText() else {
                return eventLoop.makeSucceededFuture(.text(.notFound, "metrics are off (--metrics false)"))
            }
            return eventLoop.makeSucceededFuture(
                Response(status: .ok, contentType: "text/plain; version=0.0.4; charset=utf-8", body: metricsText))
        case (.GET, "/stats"):
            let access = backend.accessStats(), network = backend.networkStats(), reload = backend.reloadStatus()
            guard let resolvers = backend.resolvers else {
                return eventLoop.makeSucceededFuture(
                    .json(StatsBody(totals: nil, domains: [], access: access, network: network, reload: reload)))
            }
            let domains = resolvers.stats.snapshot().sorted { $0.name < $1.name }
            return eventLoop.makeSucceededFuture(
                .json(StatsBody(totals: resolvers.stats.totals(), domains: domains, access: access, network: network,
                    alibabaScheduler: resolvers.schedulerSnapshot, reload: reload)))
        case (.GET, "/errors"):
            guard let errors = backend.recentErrors() else { return eventLoop.makeSucceededFuture(.text(.notFound, "no error record here")) }
            return eventLoop.makeSucceededFuture(.json(errors))
        case (.GET, "/audit"):
            guard let audit = backend.auditReport() else {
                return eventLoop.makeSucceededFuture(.text(.notFound, "the system DNS audit is off (--compare-system-dns)"))
            }
            return eventLoop.makeSucceededFuture(.json(audit))
        case (.GET, "/health/ips"):
            let ipHealth = backend.ipHealth
            let configuration = ipHealth?.configuration ?? IPHealthConfiguration()
            return eventLoop.makeSucceededFuture(
                .json(
                    IPHealthBody(
                        backoffMs: configuration.backoff.nanoseconds / 1_000_000,
                        maxBackoffMs: configuration.maxBackoff.nanoseconds / 1_000_000,
                        ips: ipHealth?.snapshot() ?? []
                    )
                )
            )
        case (.GET, "/cache"):
            let entries = backend.resolvers?.caching?.snapshot().sorted { $0.name < $1.name } ?? []
            let forwarded = backend.forwardedAnswers()?.sorted { ($0.name, $0.type) < ($1.name, $1.type) }
            return eventLoop.makeSucceededFuture(.json(CacheBody(entries: entries, forwarded: forwarded)))
        case (.DELETE, "/cache"), (.POST, "/cache/purge"):
            return purge(host: query["host"].flatMap { $0.isEmpty ? nil : $0 }, on: eventLoop)
        case (.GET, "/resolve"):
            guard let host = query["host"], !host.isEmpty else {
                return eventLoop.makeSucceededFuture(.text(.badRequest, "usage: /resolve?host=NAME"))
            }
            guard let resolvers = backend.resolvers else {
                return eventLoop.makeSucceededFuture(.text(.conflict, "no resolver configured"))
            }
            return resolvers.upstreamResolver.resolve(host: host, port: 0, on: eventLoop).map { resolution in
                .json(ResolveBody(host: host, source: resolution.source.rawValue, addresses: resolution.addresses.compactMap(\.ipAddress)))
            }.recover { error in
                .text(.badGateway, "\(host): \(error)")
            }
        case (.GET, "/summary"):
            guard let summary = backend.summary() else { return eventLoop.makeSucceededFuture(.text(.notFound, "no summary here")) }
            return eventLoop.makeSucceededFuture(.json(summary))
        default:
            // One list (`AdminEndpoint.all`) says which paths exist and what they take.
            guard let endpoint = AdminEndpoint.named(path) else {
                return eventLoop.makeSucceededFuture(.text(.notFound, AdminEndpoint.notFound(path)))
            }
            var response = Response.text(.methodNotAllowed, endpoint.methodNotAllowed)
            response.headers.append(("Allow", endpoint.allow))
            return eventLoop.makeSucceededFuture(response)
        }
    }

    struct StatsBody: Encodable {
        var totals: DomainStats?
        var domains: [DomainStats]
        var access: AccessStats?
        var network: NetworkChangeStats?
        /// Alibaba v2 service-IP scheduling (absent for other providers).
        var alibabaScheduler: AlibabaSchedulerSnapshot? = nil
        /// Configuration reloads, options named as `--help` spells them (absent without a reloader).
        var reload: ReloadStatus? = nil
    }

    /// `/health/ips`: the back-off settings and every endpoint the proxy has dialed.
    struct IPHealthBody: Encodable {
        var backoffMs: Int64
        var maxBackoffMs: Int64
        var ips: [IPHealthSnapshot]
    }

    struct CacheBody: Encodable {
        var entries: [CacheEntrySnapshot]
        /// The DNS listener's forwarded answers (absent without a DNS listener).
        var forwarded: [ForwardedAnswerListing]? = nil
    }

    struct ResolveBody: Encodable {
        var host: String
        var source: String
        var addresses: [String]
    }
}
