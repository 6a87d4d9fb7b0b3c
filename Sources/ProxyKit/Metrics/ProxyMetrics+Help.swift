extension ProxyMetrics {
    /// HELP text of every metric (swift-metrics carries none): the executable's metrics factory
    /// registers each metric with its text.
    package static let help: [String: String] = [
        "httpdns_proxy_requests_total": "Finished requests and tunnels by kind (http, https, connect, upgrade, transparent) and status class.",
        "httpdns_proxy_request_duration_seconds": "Time from a request's head to its last response byte (tunnels: to their close), by kind.",
        "httpdns_proxy_request_errors_total": "Requests and tunnels that ended in an error, by reason (a bounded error kind).",
        "httpdns_proxy_client_connections_active": "Admitted client connections open now.",
        "httpdns_proxy_tunnels_active": "CONNECT tunnels and upgraded connections open now.",
        "httpdns_proxy_client_connections_rejected_total": "Client connections refused at accept, by reason (client ACL, connection limits).",
        "httpdns_proxy_upstream_connect_attempts_total": "Connect attempts to origin addresses by family and result (ok, refused, timeout, tls, other).",
        "httpdns_proxy_upstream_connect_duration_seconds": "TCP connect time of successful attempts to origin addresses.",
        "httpdns_proxy_upstream_pool_reuses_total": "Requests that rode a pooled (kept-alive) upstream connection.",
        "httpdns_proxy_upstream_pool_lease_retirements_total": "Pooled upstream connections closed because the answer they were dialed from no longer lists their address.",
        "httpdns_proxy_resolve_requests_total": "Name lookups by how the cache answered them (hit, stale, miss, negative, coalesced).",
        "httpdns_proxy_resolver_queries_total": "Queries sent to the HTTPDNS service by provider and result (ok or the failure kind).",
        "httpdns_proxy_resolver_query_duration_seconds": "Round-trip time of queries to the HTTPDNS service, by provider.",
        "httpdns_proxy_resolver_fallbacks_total": "Times system DNS was used instead of HTTPDNS, by reason (no_answer, all_addresses_failed).",
        "httpdns_proxy_cache_entries": "Names in the DNS cache.",
        "httpdns_proxy_system_dns_comparisons_total": "HTTPDNS answers compared with the system resolver's (--compare-system-dns).",
        "httpdns_proxy_system_dns_disagreements_total": "Comparisons where the system resolver disagreed with HTTPDNS, by kind (mismatch: no common address; system_no_answer: the system resolver failed).",
        "httpdns_proxy_system_dns_audit_dropped_total": "HTTPDNS answers not compared because the audit queue was full.",
        "httpdns_proxy_address_probes_total": "TCP connect probes of answers for --probe-domains, by result (ok, refused, timeout, other).",
        "httpdns_proxy_config_reloads_total": "Configuration reloads by result.",
        "httpdns_proxy_network_changes_total": "Changes of the host's interface addresses seen by the network monitor (each refreshes the cache in the background).",
        "httpdns_proxy_transparent_hijacks_total": "Transparent connections whose original destination is none of HTTPDNS's addresses for their SNI or Host name (the app's own DNS answer was hijacked or stale).",
        "httpdns_proxy_tls_listener_handshakes_total": "TLS listener handshakes by result: ok, or failed (not TLS, a bad or missing client certificate, a timeout, the client leaving first).",
        "httpdns_proxy_tls_listener_certificate_expiry_timestamp_seconds": "When the first of the TLS listener's certificates in force expires (notAfter, seconds since the epoch); only with --tls-listen.",
        "httpdns_proxy_dns_queries_total": "Queries the DNS listener answered, by query type (a bounded set, else other) and RCODE.",
        "httpdns_proxy_build_info": "Always 1; the version label is the running build.",
    ]
}
