import COpenSSL
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Index of our `SSL` ex_data slot, pointing (unretained) at the owning `SSLConnection`.
private let sslConnectionExDataIndex: CInt = httpdns_SSL_get_ex_new_index()

/// Owns one OpenSSL `SSL` driven through a pair of memory BIOs: ciphertext from the network is
/// written into `networkToSSL`, ciphertext OpenSSL produces is read from `sslToNetwork`.
/// Not thread-safe: used on one event loop.
final class SSLConnection {
    /// The outcome of one step that may need more bytes from the peer.
    enum StepResult {
        case complete
        case wantsMoreData
        case failed(TLSError)
    }

    enum ReadResult {
        /// Decrypted bytes were appended (maybe none, if only handshake messages were processed).
        case data
        /// The peer sent close_notify.
        case closeNotify
        case failed(TLSError)
    }

    private let ssl: OpaquePointer
    /// Owned by `ssl` (SSL_set_bio transfers them; SSL_free frees them).
    private let networkToSSL: OpaquePointer
    private let sslToNetwork: OpaquePointer

    /// The client context (trust, session cache) when this end is the client; nil on a server.
    let context: TLSClientContext?
    /// The server context when this end is the server (kept alive for the SNI callback).
    let serverContext: TLSServerContext?
    /// Client: the name (or IP literal) the certificate must be valid for; also the SNI for names.
    /// Server: the client's address, for messages.
    let serverName: String
    let sessionKey: String
    let spkiPins: Set<String>
    /// Set by the verify callback when the chain was fine but the leaf's SPKI matched no pin.
    var pinMismatch = false

    /// The client end of a connection to `serverName`.
    init(context: TLSClientContext, serverName: String, port: Int, spkiPins: [String]) throws(TLSError) {
        let host = SSLConnection.normalizedHost(serverName)
        self.context = context
        self.serverContext = nil
        self.serverName = host
        self.sessionKey = "\(host):\(port)"
        self.spkiPins = Set(spkiPins)
        (self.ssl, self.networkToSSL, self.sslToNetwork) = try Self.makeSSL(context.sslContext, label: host)
        // From here on `ssl` is freed by deinit.

        SSL_set_ex_data(ssl, sslConnectionExDataIndex, Unmanaged.passUnretained(self).toOpaque())
        SSL_set_connect_state(ssl)

        guard let parameters = SSL_get0_param(ssl) else {
            throw .io(host: host, reason: "SSL_get0_param failed")
        }
        if SSLConnection.isIPAddress(host) {
            // RFC 6066: no SNI for IP literals; the certificate must carry the IP in a SAN.
            guard X509_VERIFY_PARAM_set1_ip_asc(parameters, host) == 1 else {
                throw .configuration(reason: "invalid IP address \(host)")
            }
        } else {
            guard httpdns_SSL_set_tlsext_host_name(ssl, host) == 1 else {
                throw .configuration(reason: "invalid server name \(host): \(drainOpenSSLErrorQueue() ?? "rejected by OpenSSL")")
            }
            X509_VERIFY_PARAM_set_hostflags(parameters, CUnsignedInt(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
            guard X509_VERIFY_PARAM_set1_host(parameters, host, 0) == 1 else {
                throw .configuration(reason: "invalid server name \(host)")
            }
        }

        if let session = context.cachedSession(for: self.sessionKey) {
            // Takes its own reference; a session OpenSSL cannot use just means a full handshake.
            _ = SSL_set_session(ssl, session.pointer)
        }
    }

    /// The server end of a connection accepted from `client` (its address, for messages).
    init(server: TLSServerContext, client: String) throws(TLSError) {
        self.context = nil
        self.serverContext = server
        self.serverName = client
        self.sessionKey = ""
        self.spkiPins = []
        (self.ssl, self.networkToSSL, self.sslToNetwork) = try Self.makeSSL(server.sslContexts[0], label: client)
        SSL_set_accept_state(ssl)
    }

    /// A new `SSL` on `sslContext` with its two memory BIOs (owned by the `SSL`).
    private static func makeSSL(_ sslContext: OpaquePointer, label: String) throws(TLSError) -> (OpaquePointer, OpaquePointer, OpaquePointer) {
        ERR_clear_error()
        guard let ssl = SSL_new(sslContext) else {
            throw .io(host: label, reason: "SSL_new failed: \(drainOpenSSLErrorQueue() ?? "unknown error")")
        }
        guard let networkToSSL = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw .io(host: label, reason: "BIO_new failed")
        }
        guard let sslToNetwork = BIO_new(BIO_s_mem()) else {
            BIO_free(networkToSSL)
            SSL_free(ssl)
            throw .io(host: label, reason: "BIO_new failed")
        }
        SSL_set_bio(ssl, networkToSSL, sslToNetwork)
        return (ssl, networkToSSL, sslToNetwork)
    }

    deinit {
        SSL_free(self.ssl)
    }

    /// The connection whose `SSL` is `ssl`, for C callbacks.
    static func fromSSL(_ ssl: OpaquePointer) -> SSLConnection? {
        guard let raw = SSL_get_ex_data(ssl, sslConnectionExDataIndex) else { return nil }
        return Unmanaged<SSLConnection>.fromOpaque(raw).takeUnretainedValue()
    }

    // MARK: Bytes in and out

    /// Hands ciphertext received from the peer to OpenSSL.
    func receiveFromNetwork(_ buffer: ByteBuffer) throws(TLSError) {
        guard buffer.readableBytes > 0 else { return }
        let written = buffer.withUnsafeReadableBytes { bytes in
            BIO_write(self.networkToSSL, bytes.baseAddress, CInt(bytes.count))
        }
        guard written == buffer.readableBytes else {
            throw .io(host: self.serverName, reason: "memory BIO write failed")
        }
    }

    /// Takes all ciphertext OpenSSL produced so far, or nil if there is none.
    func outboundCiphertext(allocator: ByteBufferAllocator) -> ByteBuffer? {
        let pending = Int(BIO_ctrl_pending(self.sslToNetwork))
        guard pending > 0 else { return nil }
        var buffer = allocator.buffer(capacity: pending)
        while true {
            let available = Int(BIO_ctrl_pending(self.sslToNetwork))
            if available == 0 { break }
            let read = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: available) { space in
                Int(max(0, BIO_read(self.sslToNetwork, space.baseAddress, CInt(min(space.count, Int(CInt.max))))))
            }
            if read == 0 { break }
        }
        return buffer
    }

    // MARK: TLS operations

    func doHandshake() -> StepResult {
        ERR_clear_error()
        let rc = SSL_do_handshake(self.ssl)
        if rc == 1 {
            // Resumed sessions skip certificate verification: re-check the pins on the stored leaf.
            if !self.spkiPins.isEmpty {
                guard let leaf = SSL_get0_peer_certificate(self.ssl),
                    let pin = SPKIPin.pin(ofCertificate: leaf),
                    self.spkiPins.contains(pin)
                else {
                    self.context?.removeSession(for: self.sessionKey)
                    return .failed(.certificateInvalid(host: self.serverName, reason: "pin mismatch"))
                }
            }
            return .complete
        }
        switch SSL_get_error(self.ssl, rc) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .wantsMoreData
        default:
            return .failed(self.handshakeError())
        }
    }

    private func handshakeError() -> TLSError {
        let queued = drainOpenSSLErrorQueue()
        if self.pinMismatch {
            return .certificateInvalid(host: self.serverName, reason: "pin mismatch")
        }
        let verifyResult = SSL_get_verify_result(self.ssl)
        if verifyResult != X509_V_OK {
            return .certificateInvalid(host: self.serverName, reason: verifyResultString(verifyResult))
        }
        return .handshakeFailed(host: self.serverName, reason: queued ?? "handshake failed")
    }

    /// Decrypts everything OpenSSL can from the bytes received so far, appending to `output`.
    func read(into output: inout ByteBuffer) -> ReadResult {
        while true {
            ERR_clear_error()
            var rc: CInt = 0
            output.writeWithUnsafeMutableBytes(minimumWritableBytes: 16 * 1024) { space in
                rc = SSL_read(self.ssl, space.baseAddress, CInt(min(space.count, Int(CInt.max))))
                return rc > 0 ? Int(rc) : 0
            }
            if rc > 0 { continue }
            switch SSL_get_error(self.ssl, rc) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                return .data
            case SSL_ERROR_ZERO_RETURN:
                return .closeNotify
            default:
                return .failed(.protocolError(host: self.serverName, reason: drainOpenSSLErrorQueue() ?? "read failed"))
            }
        }
    }

    /// Encrypts `buffer` entirely (memory BIOs never push back).
    func write(_ buffer: ByteBuffer) -> StepResult {
        guard buffer.readableBytes > 0 else { return .complete }
        ERR_clear_error()
        let rc = buffer.withUnsafeReadableBytes { bytes in
            SSL_write(self.ssl, bytes.baseAddress, CInt(bytes.count))
        }
        if rc == buffer.readableBytes { return .complete }
        switch SSL_get_error(self.ssl, rc) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .wantsMoreData
        default:
            return .failed(.protocolError(host: self.serverName, reason: drainOpenSSLErrorQueue() ?? "write failed"))
        }
    }

    /// Queues our close_notify (we do not wait for the peer's).
    func shutdown() {
        ERR_clear_error()
        _ = SSL_shutdown(self.ssl)
        ERR_clear_error()
    }

    // MARK: Facts after the handshake

    var negotiatedProtocol: String? {
        var name: UnsafePointer<UInt8>?
        var length: CUnsignedInt = 0
        SSL_get0_alpn_selected(self.ssl, &name, &length)
        guard let name, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: name, count: Int(length)), as: UTF8.self)
    }

    var sessionReused: Bool { SSL_session_reused(self.ssl) == 1 }

    var tlsVersion: String { String(cString: SSL_get_version(self.ssl)) }

    /// The server name the client asked for (SNI), on a server.
    var requestedServerName: String? {
        SSL_get_servername(self.ssl, TLSEXT_NAMETYPE_host_name).map { String(cString: $0) }
    }

    /// The common name of the peer's verified certificate, if it sent one.
    var peerCertificateName: String? {
        guard let certificate = SSL_get0_peer_certificate(self.ssl), SSL_get_verify_result(self.ssl) == X509_V_OK else { return nil }
        return certificateCommonName(certificate) ?? certificateDNSNames(certificate).first
    }

    // MARK: Names

    /// Lower-cased, without IPv6 brackets or a trailing dot: the form used for SNI, verification
    /// and the session cache key.
    static func normalizedHost(_ name: String) -> String {
        var host = Substring(name.lowercased())
        if host.hasPrefix("["), host.hasSuffix("]") {
            host = host.dropFirst().dropLast()
        }
        if host.hasSuffix("."), host.count > 1 {
            host = host.dropLast()
        }
        return String(host)
    }

    static func isIPAddress(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}
