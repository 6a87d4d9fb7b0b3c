import COpenSSL

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The server side of TLS: one OpenSSL `SSL_CTX` per certificate (TLS 1.2 minimum, no
/// renegotiation, ALPN `http/1.1` when offered, client certificates required when a client CA is
/// configured). A connection starts on the first; the SNI callback moves it to the identity whose
/// certificate names the requested server. Build a new one to reload: connections keep the
/// context they started with.
public final class TLSServerContext: @unchecked Sendable {
    // @unchecked: the SSL_CTXs and leaf pointers are set up in `init` and afterwards only read
    // (SSL_new and the callbacks; OpenSSL 3 allows that from several threads).

    public let configuration: TLSServerConfiguration

    /// One per identity, in configuration order.
    let sslContexts: [OpaquePointer]
    /// The leaf certificate of each identity (owned by its SSL_CTX).
    private let leaves: [OpaquePointer]

    public init(configuration: TLSServerConfiguration) throws(TLSError) {
        guard !configuration.identities.isEmpty else {
            throw .configuration(reason: "a TLS listener needs a certificate and its key")
        }
        var contexts: [OpaquePointer] = []
        var leaves: [OpaquePointer] = []
        do throws(TLSError) {
            for identity in configuration.identities {
                let context = try Self.makeContext(identity, clientCAFile: configuration.clientCAFile)
                contexts.append(context)
                guard let leaf = SSL_CTX_get0_certificate(context) else {
                    throw TLSError.configuration(reason: "no certificate in \(identity.certificateFile)")
                }
                leaves.append(leaf)
            }
        } catch {
            for context in contexts { SSL_CTX_free(context) }
            throw error
        }
        self.configuration = configuration
        self.sslContexts = contexts
        self.leaves = leaves
        if contexts.count > 1 {
            httpdns_SSL_CTX_set_servername_callback(contexts[0], tlsServerNameCallback, Unmanaged.passUnretained(self).toOpaque())
        }
    }

    deinit {
        for context in self.sslContexts { SSL_CTX_free(context) }
    }

    /// The DNS names (subject alternative names, or the common name when there are none) of each
    /// identity's certificate, for the logs and the admin page.
    public var certificateNames: [[String]] {
        self.leaves.map { certificateDNSNames($0) }
    }

    /// The earliest end of validity (notAfter) among the certificates presented, in seconds since
    /// the epoch: what an expiry alert watches.
    public var earliestExpiry: Int64? {
        self.leaves.compactMap { leaf -> Int64? in
            guard let notAfter = X509_get0_notAfter(leaf) else { return nil }
            var parts = tm()
            guard ASN1_TIME_to_tm(notAfter, &parts) == 1 else { return nil }
            return Int64(timegm(&parts))
        }.min()
    }

    /// The identity to present for `serverName`: the first whose certificate is valid for it, or
    /// the first identity.
    func context(forServerName serverName: String) -> OpaquePointer {
        for (index, leaf) in self.leaves.enumerated() where X509_check_host(leaf, serverName, serverName.utf8.count, CUnsignedInt(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS), nil) == 1 {
            return self.sslContexts[index]
        }
        return self.sslContexts[0]
    }

    private static func makeContext(_ identity: TLSServerConfiguration.Identity, clientCAFile: String?) throws(TLSError) -> OpaquePointer {
        for (path, what) in [(identity.certificateFile, "certificate"), (identity.keyFile, "key")] where access(path, R_OK) != 0 {
            // OpenSSL would only say "system lib".
            throw .configuration(reason: "cannot read \(what) file \(path): \(String(cString: strerror(errno)))")
        }
        if let clientCAFile, access(clientCAFile, R_OK) != 0 {
            throw .configuration(reason: "cannot read client CA file \(clientCAFile): \(String(cString: strerror(errno)))")
        }
        ERR_clear_error()
        guard let context = SSL_CTX_new(TLS_server_method()) else {
            throw .configuration(reason: "SSL_CTX_new failed: \(drainOpenSSLErrorQueue() ?? "unknown error")")
        }
        do throws(TLSError) {
            guard httpdns_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION) == 1 else {
                throw .configuration(reason: "cannot require TLS 1.2: \(drainOpenSSLErrorQueue() ?? "unknown error")")
            }
            httpdns_SSL_CTX_set_server_options(context)
            guard SSL_CTX_use_certificate_chain_file(context, identity.certificateFile) == 1 else {
                throw .configuration(reason: "cannot load certificate file \(identity.certificateFile): \(drainOpenSSLErrorQueue() ?? "no PEM certificate")")
            }
            guard SSL_CTX_use_PrivateKey_file(context, identity.keyFile, SSL_FILETYPE_PEM) == 1 else {
                throw .configuration(reason: "cannot load key file \(identity.keyFile): \(drainOpenSSLErrorQueue() ?? "no PEM private key")")
            }
            guard SSL_CTX_check_private_key(context) == 1 else {
                throw .configuration(
                    reason: "the key in \(identity.keyFile) does not match the certificate in \(identity.certificateFile)"
                )
            }
            // Resumed sessions stay bound to this listener (and, with client certificates, to the
            // verification they passed).
            let sessionContext = Array("httpdns-proxy".utf8)
            _ = SSL_CTX_set_session_id_context(context, sessionContext, CUnsignedInt(sessionContext.count))
            SSL_CTX_set_alpn_select_cb(context, tlsALPNSelectCallback, nil)
            if let clientCAFile {
                guard SSL_CTX_load_verify_locations(context, clientCAFile, nil) == 1 else {
                    throw .configuration(reason: "cannot load client CA file \(clientCAFile): \(drainOpenSSLErrorQueue() ?? "no PEM certificate")")
                }
                guard let names = SSL_load_client_CA_file(clientCAFile) else {
                    throw .configuration(reason: "no CA certificate in client CA file \(clientCAFile)")
                }
                SSL_CTX_set_client_CA_list(context, names)
                SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
            }
        } catch {
            SSL_CTX_free(context)
            throw error
        }
        return context
    }
}

/// SNI: moves the connection to the identity whose certificate names the requested server.
private func tlsServerNameCallback(ssl: OpaquePointer?, alert: UnsafeMutablePointer<CInt>?, argument: UnsafeMutableRawPointer?) -> CInt {
    guard let ssl, let argument, let name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name) else {
        return SSL_TLSEXT_ERR_OK
    }
    let server = Unmanaged<TLSServerContext>.fromOpaque(argument).takeUnretainedValue()
    let chosen = server.context(forServerName: String(cString: name))
    if chosen != server.sslContexts[0] {
        _ = SSL_set_SSL_CTX(ssl, chosen)
    }
    return SSL_TLSEXT_ERR_OK
}

/// ALPN: a proxy speaks HTTP/1.1; a client that offers something else gets no ALPN answer.
private func tlsALPNSelectCallback(
    ssl: OpaquePointer?, out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?, outLength: UnsafeMutablePointer<UInt8>?,
    offered: UnsafePointer<UInt8>?, offeredLength: CUnsignedInt, argument: UnsafeMutableRawPointer?
) -> CInt {
    guard let offered, let out, let outLength else { return SSL_TLSEXT_ERR_NOACK }
    let wanted = Array("http/1.1".utf8)
    var index = 0
    let count = Int(offeredLength)
    while index < count {
        let length = Int(offered[index])
        let start = index + 1
        guard start + length <= count else { break }
        if length == wanted.count, (0..<length).allSatisfy({ offered[start + $0] == wanted[$0] }) {
            out.pointee = offered + start
            outLength.pointee = UInt8(length)
            return SSL_TLSEXT_ERR_OK
        }
        index = start + length
    }
    return SSL_TLSEXT_ERR_NOACK
}

/// The certificate's DNS subject alternative names, or its common name when it has none.
func certificateDNSNames(_ certificate: OpaquePointer) -> [String] {
    var names: [String] = []
    if let raw = X509_get_ext_d2i(certificate, NID_subject_alt_name, nil, nil) {
        let stack = OpaquePointer(raw)
        for index in 0..<OPENSSL_sk_num(stack) {
            guard let entry = OPENSSL_sk_value(stack, index)?.assumingMemoryBound(to: GENERAL_NAME.self) else { continue }
            if entry.pointee.type == GEN_DNS, let text = asn1Text(entry.pointee.d.dNSName) {
                names.append(text)
            }
        }
        GENERAL_NAMES_free(stack)
    }
    if names.isEmpty, let common = certificateCommonName(certificate) { names.append(common) }
    return names
}

/// The subject's common name.
func certificateCommonName(_ certificate: OpaquePointer) -> String? {
    guard let subject = X509_get_subject_name(certificate) else { return nil }
    let index = X509_NAME_get_index_by_NID(subject, NID_commonName, -1)
    guard index >= 0, let entry = X509_NAME_get_entry(subject, index) else { return nil }
    return asn1Text(X509_NAME_ENTRY_get_data(entry))
}

private func asn1Text(_ string: UnsafeMutablePointer<ASN1_STRING>?) -> String? {
    guard let string, let data = ASN1_STRING_get0_data(string) else { return nil }
    let length = Int(ASN1_STRING_length(string))
    return String(decoding: UnsafeBufferPointer(start: data, count: length), as: UTF8.self)
}
