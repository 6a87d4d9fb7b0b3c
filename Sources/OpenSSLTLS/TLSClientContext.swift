import COpenSSL
import NIOConcurrencyHelpers

/// Owns one OpenSSL `SSL_CTX` configured for verifying clients: TLS 1.2 minimum,
/// `SSL_VERIFY_PEER` (never relaxed), the configured trust anchors and ALPN list, and a client
/// session cache keyed by "host:port".
///
/// Create one per configuration and share it between connections and event loops.
public final class TLSClientContext: @unchecked Sendable {
    // @unchecked: `sslContext` is configured once in `init` and afterwards only used by
    // `SSL_new` (thread-safe in OpenSSL 3); the session cache is behind a lock.

    /// The configuration this context was built from.
    public let configuration: TLSClientConfiguration

    let sslContext: OpaquePointer
    private let sessionCache: NIOLockedValueBox<TLSSessionCache>

    public init(configuration: TLSClientConfiguration) throws(TLSError) {
        guard let sslContext = SSL_CTX_new(TLS_client_method()) else {
            throw .configuration(reason: "SSL_CTX_new failed: \(drainOpenSSLErrorQueue() ?? "unknown error")")
        }
        // Owned from here on: freed in deinit, also when a later step throws.
        self.sslContext = sslContext
        self.configuration = configuration
        self.sessionCache = NIOLockedValueBox(TLSSessionCache(capacity: configuration.sessionCacheCapacity))

        ERR_clear_error()
        guard httpdns_SSL_CTX_set_min_proto_version(sslContext, TLS1_2_VERSION) == 1 else {
            throw .configuration(reason: "cannot require TLS 1.2: \(drainOpenSSLErrorQueue() ?? "unknown error")")
        }
        httpdns_SSL_CTX_set_client_options(sslContext)
        SSL_CTX_set_verify(sslContext, SSL_VERIFY_PEER, openSSLVerifyCallback)

        if configuration.useSystemTrustStore {
            switch configuration.systemTrustLocation ?? .detect() {
            case .openSSLDefaults:
                guard SSL_CTX_set_default_verify_paths(sslContext) == 1 else {
                    throw .configuration(reason: "cannot load the system trust store: \(drainOpenSSLErrorQueue() ?? "unknown error")")
                }
            case .hashedDirectory(let directory):
                guard SSL_CTX_load_verify_locations(sslContext, nil, directory) == 1 else {
                    throw .configuration(reason: "cannot use the trust directory \(directory): \(drainOpenSSLErrorQueue() ?? "unknown error")")
                }
            }
        }
        if let caFile = configuration.caFile {
            guard SSL_CTX_load_verify_locations(sslContext, caFile, nil) == 1 else {
                throw .configuration(reason: "cannot load CA file \(caFile): \(drainOpenSSLErrorQueue() ?? "unknown error")")
            }
        }

        if !configuration.alpn.isEmpty {
            var wire: [UInt8] = []
            for name in configuration.alpn {
                let bytes = Array(name.utf8)
                guard (1...255).contains(bytes.count) else {
                    throw .configuration(reason: "ALPN protocol name must be 1 to 255 bytes: \"\(name)\"")
                }
                wire.append(UInt8(bytes.count))
                wire.append(contentsOf: bytes)
            }
            // Returns 0 on success (unlike most of OpenSSL).
            guard SSL_CTX_set_alpn_protos(sslContext, wire, CUnsignedInt(wire.count)) == 0 else {
                throw .configuration(reason: "cannot set ALPN protocols: \(drainOpenSSLErrorQueue() ?? "unknown error")")
            }
        }

        httpdns_SSL_CTX_enable_client_session_cache(sslContext)
        SSL_CTX_sess_set_new_cb(sslContext, openSSLNewSessionCallback)
    }

    deinit {
        SSL_CTX_free(self.sslContext)
    }

    /// Certificates and CRLs held in the context's trust store now (a hashed directory's anchors
    /// are added as chains need them).
    package var trustStoreObjectCount: Int {
        guard let store = SSL_CTX_get_cert_store(sslContext) else { return 0 }
        return Int(httpdns_X509_STORE_object_count(store))
    }

    /// The number of "host:port" keys with a stored session.
    public var cachedSessionCount: Int {
        self.sessionCache.withLockedValue { $0.count }
    }

    /// Forgets every stored session.
    public func removeAllCachedSessions() {
        self.sessionCache.withLockedValue { $0 = TLSSessionCache(capacity: self.configuration.sessionCacheCapacity) }
    }

    func cachedSession(for key: String) -> SSLSession? {
        self.sessionCache.withLockedValue { $0.session(for: key) }
    }

    func storeSession(_ session: SSLSession, for key: String) {
        self.sessionCache.withLockedValue { $0.store(session, for: key) }
    }

    func removeSession(for key: String) {
        self.sessionCache.withLockedValue { $0.removeSession(for: key) }
    }
}

/// Verify callback shared by every connection: OpenSSL's chain and host/IP result stands, and
/// on success at the leaf the connection's SPKI pins (if any) must match.
private func openSSLVerifyCallback(preverifyOK: CInt, storeContext: OpaquePointer?) -> CInt {
    guard preverifyOK == 1, let storeContext else { return preverifyOK }
    guard X509_STORE_CTX_get_error_depth(storeContext) == 0 else { return 1 }
    guard let rawSSL = X509_STORE_CTX_get_ex_data(storeContext, SSL_get_ex_data_X509_STORE_CTX_idx()),
        let connection = SSLConnection.fromSSL(OpaquePointer(rawSSL))
    else {
        return 1
    }
    guard !connection.spkiPins.isEmpty else { return 1 }
    if let leaf = X509_STORE_CTX_get_current_cert(storeContext),
        let pin = SPKIPin.pin(ofCertificate: leaf),
        connection.spkiPins.contains(pin)
    {
        return 1
    }
    connection.pinMismatch = true
    X509_STORE_CTX_set_error(storeContext, X509_V_ERR_APPLICATION_VERIFICATION)
    return 0
}

/// New-session callback: called after a TLS 1.2 handshake and for each TLS 1.3 ticket.
/// Stores a duplicate so that OpenSSL marking the connection's own session not resumable
/// (e.g. when it is freed without a close_notify) does not affect the cached copy.
private func openSSLNewSessionCallback(ssl: OpaquePointer?, session: OpaquePointer?) -> CInt {
    guard let ssl, let session, let connection = SSLConnection.fromSSL(ssl) else { return 0 }
    guard SSL_SESSION_is_resumable(session) == 1, let copy = SSL_SESSION_dup(session) else { return 0 }
    connection.context?.storeSession(SSLSession(takingOwnershipOf: copy), for: connection.sessionKey)
    // 0: we did not keep OpenSSL's reference (we keep our duplicate instead).
    return 0
}
