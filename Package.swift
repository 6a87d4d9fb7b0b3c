// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "httpdns-proxy",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "httpdns-proxy", targets: ["httpdns-proxy"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        // Metrics: the libraries record through swift-metrics; the executable bootstraps
        // swift-prometheus and serves its text at the admin /metrics.
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // Tests only: in-process TLS origins for the OpenSSL client (the proxy itself uses system OpenSSL).
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        // Tests only: a real RFC 8941 parser checks the Proxy-Status fields the proxy writes.
        .package(url: "https://github.com/apple/swift-http-structured-headers.git", from: "1.7.0"),
    ],
    targets: [
        // System libraries: wired through pkg-config so a missing -dev package fails with a clear hint.
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        // libxcrypt's crypt_r verifies htpasswd hashes (bcrypt, sha-crypt, yescrypt) for proxy auth.
        .systemLibrary(
            name: "CCrypt",
            pkgConfig: "libxcrypt",
            providers: [.apt(["libcrypt-dev"])]
        ),
        // libyaml reads the config file (ProxyConfig/YAMLReader.swift); the runtime needs libyaml-0-2.
        .systemLibrary(
            name: "CYAML",
            pkgConfig: "yaml-0.1",
            providers: [.apt(["libyaml-dev"])]
        ),
        // A few lines of C for the netlink socket the network monitor reads (Linux only; elsewhere it
        // reports ENOSYS and the monitor polls).
        .target(name: "CNetlink"),
        // IPAddress, CIDR, HostName, HostPort and their parsing: a leaf, so the resolver library uses
        // one canonical address text without depending on the configuration.
        .target(name: "NetworkTypes"),
        .target(
            name: "ProxyConfig",
            dependencies: [
                "NetworkTypes",
                "CYAML",
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .target(
            name: "CurlTransport",
            dependencies: [
                "CCurl",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        .target(
            name: "HTTPDNS",
            dependencies: [
                "CurlTransport",
                "NetworkTypes",  // IPAddress: one canonical text for an address in both modules
                "COpenSSL",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "OpenSSLTLS",
            dependencies: [
                "COpenSSL",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        // The leaf kit every proxy module shares: errors and Proxy-Status, the access record and its
        // writers, metrics, the admin summary's tallies, ring buffer and token bucket, listener bootstrap.
        .target(
            name: "ProxyKit",
            dependencies: [
                "HTTP1Codec",
                "HTTPDNS",
                "ProxyConfig",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // HTTP/1 messages on the forward path: request and response decoding rules (MessageFraming),
        // request targets, Connection tokens, the rewriter and the head writer.
        .target(
            name: "ProxyHTTP",
            dependencies: [
                "ProxyKit",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // The HTTP/1 codec the forward path is moving to (issue 35): a one-pass head parser that
        // returns byte ranges, the chunked body decoder and encoder, and a head writer into a reused
        // buffer. NIOCore only (no Foundation, no NIOHTTP1): ProxyHTTP stays its test-time oracle.
        .target(
            name: "HTTP1Codec",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio")
            ]
        ),
        // Who may use the proxy: client ACL and connection limits, Basic proxy credentials (htpasswd).
        .target(
            name: "ProxyAccess",
            dependencies: [
                "ProxyKit",
                "CCrypt",
                "HTTPDNS",
                "ProxyConfig",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // Reaching origins: the resolver stack (HTTPDNS, cache, system fallback), the connector
        // (Happy Eyeballs, IP health, TLS), the pool and its leases, the upstream connection and its machine.
        .target(
            name: "ProxyUpstream",
            dependencies: [
                "ProxyKit",
                "ProxyHTTP",
                "HTTP1Codec",
                "CurlTransport",
                "HTTPDNS",
                "OpenSSLTLS",
                "ProxyConfig",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Background checks: the system-DNS audit (hijack detection) and address probing.
        .target(
            name: "ProxyChecks",
            dependencies: [
                "ProxyKit",
                "ProxyUpstream",
                "HTTPDNS",
                "ProxyConfig",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The forward proxy: the client connection's machine and handler, CONNECT and upgrade tunnels.
        .target(
            name: "ForwardProxy",
            dependencies: [
                "ProxyKit",
                "ProxyHTTP",
                "HTTP1Codec",
                "ProxyAccess",
                "ProxyUpstream",
                "ProxyConfig",
                "OpenSSLTLS",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // Transparent interception: original destination, the ClientHello/Host peek, the plan.
        // SOCKS5 (RFC 1928, 1929) and SOCKS4/4a: the handshake as a value with no I/O. Uses
        // TransparentProxy's peek (ClientHello and request-head parsers) for `socks-sniff`.
        .target(
            name: "SOCKSProxy",
            dependencies: [
                "ProxyKit",
                "ProxyAccess",
                "ForwardProxy",
                "TransparentProxy",
                "ProxyConfig",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .target(
            name: "TransparentProxy",
            dependencies: [
                "ProxyKit",
                "ProxyAccess",
                "ProxyUpstream",
                "ForwardProxy",
                "ProxyConfig",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // The DNS (UDP/TCP) and DoH listeners answering from the HTTPDNS cache, and the forwarder.
        .target(
            name: "DNSListener",
            dependencies: [
                "ProxyKit",
                "ProxyUpstream",
                "HTTPDNS",
                "ProxyConfig",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Network change detection (netlink) and what the proxy does about a change.
        .target(
            name: "NetworkWatch",
            dependencies: [
                "ProxyKit",
                "ProxyUpstream",
                "CNetlink",
                "HTTPDNS",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The admin listener: routes, the admin page, PAC file, health probe.
        .target(
            name: "ProxyAdmin",
            dependencies: [
                "ProxyKit",
                "ProxyUpstream",
                "ProxyChecks",
                "TransparentProxy",
                "NetworkWatch",
                "HTTPDNS",
                "ProxyConfig",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The composition root: the proxy server built from a configuration, its listeners and reloads.
        .target(
            name: "ProxyApp",
            dependencies: [
                "ProxyKit",
                "ProxyAccess",
                "ProxyUpstream",
                "ProxyChecks",
                "ForwardProxy",
                "TransparentProxy",
                "SOCKSProxy",
                "NetworkWatch",
                "DNSListener",
                "ProxyAdmin",
                "HTTPDNS",
                "OpenSSLTLS",
                "ProxyConfig",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "httpdns-proxy",
            dependencies: [
                "ProxyApp",
                "ProxyKit",
                "ProxyUpstream",
                "ProxyChecks",
                "TransparentProxy",
                "DNSListener",
                "NetworkWatch",
                "ProxyAdmin",
                "HTTPDNS",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                "ProxyConfig",
                "CCurl",
                "COpenSSL",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            // Release builds link with lld and pack the relative relocations (DT_RELR, glibc 2.36+):
            // the static build's ~97,000 relocations (2.3 MB, read by the dynamic linker at every
            // start) become a few KiB, 1.5 MiB less RSS. gold, the default here, has no such option.
            linkerSettings: [
                .unsafeFlags(
                    ["-Xclang-linker", "-fuse-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"],
                    .when(platforms: [.linux], configuration: .release)
                )
            ]
        ),
        // Benchmarks: targets of this package, not products, so `package` access reaches what they
        // measure. resolver-bench: the cache and resolver figures (bench/bench run --scenarios resolver).
        .executableTarget(
            name: "resolver-bench",
            dependencies: [
                "HTTPDNS",
                "TestSupport",
                "ProxyUpstream",
                "CurlTransport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/ResolverBench"
        ),
        // The floor under any SwiftNIO forward path: a byte relay that parses nothing
        // (bench/bench pinned --floor measures it beside the proxy and nginx).
        .executableTarget(
            name: "nio-floor",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Benchmarks/NIOFloor"
        ),
        // The test servers every test target shares (HTTP, TLS and byte-recording origins, TCP echo,
        // silent peer, fake HTTPDNS services and DNS upstream), all started with `start() async` on
        // port 0 of a loopback address, and the test CA.
        .target(
            name: "TestSupport",
            dependencies: [
                "COpenSSL",
                "HTTPDNS",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Tests/TestSupport"
        ),
        // Today's HTTP/1 stack (llhttp inside ProxyHTTP's decoders, and MessageFraming's rules) as
        // the oracle for the new codec, a message generator, and the comparison: shared by the
        // codec tests and the libFuzzer target. Not a dependency of anything that ships.
        .target(
            name: "HTTP1CodecOracle",
            dependencies: [
                "HTTP1Codec",
                "ProxyHTTP",
                "ProxyKit",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Tests/HTTP1CodecOracle"
        ),
        .testTarget(
            name: "CurlTransportTests",
            dependencies: [
                "CurlTransport",
                "TestSupport",
            ]
        ),
        .testTarget(
            name: "HTTPDNSTests",
            dependencies: [
                "HTTPDNS",
                "TestSupport",
                "CurlTransport",
                "COpenSSL",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "OpenSSLTLSTests",
            dependencies: [
                "OpenSSLTLS",
                "TestSupport",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .testTarget(
            name: "ProxyConfigTests",
            dependencies: [
                "ProxyConfig",
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "ProxyKitTests",
            dependencies: [
                "ProxyKit",
                "ProxyHTTP",
                "HTTPDNS",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "ProxyHTTPTests",
            dependencies: [
                "ProxyHTTP",
                "ProxyKit",
                "ForwardProxy",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // The codec's strictness rules byte by byte, and a seeded differential test against today's
        // stack (NIOHTTP1's llhttp decoders plus ProxyHTTP's framing rules).
        .testTarget(
            name: "HTTP1CodecTests",
            dependencies: [
                "HTTP1Codec",
                "HTTP1CodecOracle",
                "ProxyHTTP",
                "ProxyKit",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "ProxyAccessTests",
            dependencies: [
                "ProxyAccess",
                "CCrypt",
                "ProxyConfig",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "ProxyUpstreamTests",
            dependencies: [
                "ProxyUpstream",
                "ProxyKit",
                "HTTP1Codec",
                "HTTPDNS",
                "OpenSSLTLS",
                "ProxyConfig",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "ProxyChecksTests",
            dependencies: [
                "ProxyChecks",
                "ProxyKit",
                "ProxyUpstream",
                "ProxyApp",
                "ProxyConfig",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "ForwardProxyTests",
            dependencies: [
                "ForwardProxy",
                "ProxyKit",
                "HTTP1Codec",
                "HTTP1CodecOracle",
                "ProxyHTTP",
                "ProxyAccess",
                "ProxyUpstream",
                "ProxyApp",
                "ProxyConfig",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "SOCKSProxyTests",
            dependencies: [
                "SOCKSProxy",
                "ProxyAccess",
                "ProxyKit",
                "ProxyConfig",
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "TransparentProxyTests",
            dependencies: [
                "TransparentProxy",
                "HTTP1Codec",
                "ProxyUpstream",
                "ForwardProxy",
                "ProxyAccess",
                "ProxyKit",
                "ProxyConfig",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "DNSListenerTests",
            dependencies: [
                "DNSListener",
                "ProxyKit",
                "ProxyUpstream",
                "HTTPDNS",
                "ProxyConfig",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "NetworkWatchTests",
            dependencies: [
                "NetworkWatch",
                "ProxyUpstream",
                "ProxyApp",
                "HTTPDNS",
                "ProxyConfig",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "ProxyAdminTests",
            dependencies: [
                "ProxyAdmin",
                "ProxyConfig",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "ProxyAppTests",
            dependencies: [
                "ProxyApp",
                "ProxyKit",
                "DNSListener",
                "NetworkWatch",
                "ProxyAdmin",
                "ProxyConfig",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "httpdns-proxy",
                "TestSupport",
                "ProxyConfig",
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "RawStructuredFieldValues", package: "swift-http-structured-headers"),
            ]
        ),
    ]
)

// libFuzzer targets for the parsers that read attacker bytes (scripts/fuzz.sh). Only with
// HTTPDNS_PROXY_FUZZ=1: the target has no main of its own (libFuzzer supplies it), so a normal
// build must not see it.
if Context.environment["HTTPDNS_PROXY_FUZZ"] == "1" {
    package.targets.append(
        .executableTarget(
            name: "ParserFuzz",
            dependencies: [
                "ProxyKit",
                "ProxyHTTP",
                "TransparentProxy",
                "HTTPDNS",
                "HTTP1Codec",
                "HTTP1CodecOracle",
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Fuzz/ParserFuzz",
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        )
    )
}
