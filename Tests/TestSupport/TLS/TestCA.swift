import COpenSSL
import Foundation

/// A certificate authority generated at test time with OpenSSL (EC P-256, SHA-256 signatures).
///
/// ```swift
/// let ca = try TestCA()
/// let leaf = try ca.issueLeaf(dnsNames: ["origin.test"], ipAddresses: ["127.0.0.1"])
/// let caFile = try ca.writeCAFile()          // trust anchor for the client under test
/// let otherCA = try TestCA(commonName: "Unrelated Test CA")   // for "untrusted" tests
/// ```
///
/// Only PEM strings are stored, so a `TestCA` can be shared freely between tasks.
public struct TestCA: Sendable {
    /// The CA certificate (PEM): the trust anchor.
    public let certificatePEM: String
    /// The CA private key (PKCS#8 PEM).
    public let privateKeyPEM: String
    public let commonName: String

    /// Generates a new self-signed CA (basicConstraints critical CA:TRUE, keyCertSign) valid from
    /// one hour ago for ten years. Give unrelated CAs different names.
    public init(commonName: String = "httpdns-proxy Test CA") throws(TestCAError) {
        let key = try OwnedPrivateKey.generateP256()
        let certificate = try CertificateBuilder.build(
            subjectCommonName: commonName,
            subjectKey: key,
            issuer: nil,
            issuerKey: key,
            notBefore: Date().addingTimeInterval(-3600),
            notAfter: Date().addingTimeInterval(10 * 365 * 86400),
            extensions: [
                (NID_basic_constraints, "critical,CA:TRUE"),
                (NID_key_usage, "critical,keyCertSign,cRLSign"),
                (NID_subject_key_identifier, "hash"),
            ]
        )
        self.certificatePEM = try certificate.pem()
        self.privateKeyPEM = try key.pem()
        self.commonName = commonName
    }

    /// Issues a server certificate signed by this CA.
    /// - Parameters:
    ///   - dnsNames: subjectAltName DNS entries (e.g. "origin.test", "*.example.test").
    ///   - ipAddresses: subjectAltName IP entries (e.g. "127.0.0.1", "::1").
    ///   - commonName: subject CN; defaults to the first DNS name or IP.
    ///   - notBefore / notAfter: validity; pass a past `notAfter` for an expired leaf.
    public func issueLeaf(
        dnsNames: [String] = [],
        ipAddresses: [String] = [],
        commonName: String? = nil,
        notBefore: Date = Date().addingTimeInterval(-3600),
        notAfter: Date = Date().addingTimeInterval(30 * 86400)
    ) throws(TestCAError) -> TestLeafCertificate {
        let caCertificate = try OwnedX509(pem: self.certificatePEM)
        let caKey = try OwnedPrivateKey(pem: self.privateKeyPEM)
        let key = try OwnedPrivateKey.generateP256()
        var extensions: [(CInt, String)] = [
            (NID_basic_constraints, "critical,CA:FALSE"),
            (NID_key_usage, "critical,digitalSignature,keyEncipherment"),
            (NID_ext_key_usage, "serverAuth,clientAuth"),
            (NID_subject_key_identifier, "hash"),
            (NID_authority_key_identifier, "keyid:always"),
        ]
        let sans = dnsNames.map { "DNS:\($0)" } + ipAddresses.map { "IP:\($0)" }
        if !sans.isEmpty {
            extensions.append((NID_subject_alt_name, sans.joined(separator: ",")))
        }
        let certificate = try CertificateBuilder.build(
            subjectCommonName: commonName ?? dnsNames.first ?? ipAddresses.first ?? "test leaf",
            subjectKey: key,
            issuer: caCertificate,
            issuerKey: caKey,
            notBefore: notBefore,
            notAfter: notAfter,
            extensions: extensions
        )
        return TestLeafCertificate(certificatePEM: try certificate.pem(), privateKeyPEM: try key.pem())
    }

    /// Writes the CA certificate to a new file in a fresh temporary directory; returns its path.
    public func writeCAFile() throws -> String {
        try TestCA.writeTemporaryFile(named: "ca.pem", contents: self.certificatePEM)
    }

    /// Writes the CA certificate into a fresh temporary directory under its subject-name hash
    /// (`HHHHHHHH.0`, as `openssl rehash` names it), the form OpenSSL's directory lookup reads;
    /// returns the directory.
    public func writeHashedDirectory() throws -> String {
        let certificate = try OwnedX509(pem: self.certificatePEM)
        var ok: CInt = 0
        let hash = X509_NAME_hash_ex(X509_get_subject_name(certificate.pointer), nil, nil, &ok)
        guard ok == 1 else { throw TestCAError("cannot hash the CA's subject name: \(openSSLErrorReason())") }
        let file = try TestCA.writeTemporaryFile(named: String(format: "%08lx.0", hash), contents: self.certificatePEM)
        return (file as NSString).deletingLastPathComponent
    }

    /// Writes `contents` to `name` in a fresh temporary directory; returns the path.
    public static func writeTemporaryFile(named name: String, contents: String) throws -> String {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("httpdns-proxy-tls-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent(name)
        try Data(contents.utf8).write(to: file)
        return file.path
    }

    /// Base64 SHA-256 of the DER SubjectPublicKeyInfo of a PEM certificate (an SPKI pin).
    public static func spkiSHA256Base64(_ certificatePEM: String) throws(TestCAError) -> String {
        let certificate = try OwnedX509(pem: certificatePEM)
        guard let publicKey = X509_get_X509_PUBKEY(certificate.pointer) else {
            throw TestCAError("certificate has no public key")
        }
        let length = i2d_X509_PUBKEY(publicKey, nil)
        guard length > 0 else { throw TestCAError("cannot encode the public key") }
        var der = [UInt8](repeating: 0, count: Int(length))
        _ = der.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return i2d_X509_PUBKEY(publicKey, &cursor)
        }
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var digestLength: CUnsignedInt = 0
        guard EVP_Digest(der, der.count, &digest, &digestLength, EVP_sha256(), nil) == 1 else {
            throw TestCAError("SHA-256 failed")
        }
        return Data(digest.prefix(Int(digestLength))).base64EncodedString()
    }
}

/// A server certificate and its key, as PEM.
public struct TestLeafCertificate: Sendable {
    public let certificatePEM: String
    /// PKCS#8 PEM.
    public let privateKeyPEM: String

    /// The leaf's SPKI pin (see `TestCA.spkiSHA256Base64`).
    public func spkiSHA256Base64() throws(TestCAError) -> String {
        try TestCA.spkiSHA256Base64(self.certificatePEM)
    }
}

private enum CertificateBuilder {
    /// Builds and signs an X509v3 certificate; `issuer == nil` means self-signed.
    static func build(
        subjectCommonName: String,
        subjectKey: OwnedPrivateKey,
        issuer: OwnedX509?,
        issuerKey: OwnedPrivateKey,
        notBefore: Date,
        notAfter: Date,
        extensions: [(CInt, String)]
    ) throws(TestCAError) -> OwnedX509 {
        guard let raw = X509_new() else { throw TestCAError("X509_new failed") }
        let certificate = OwnedX509(takingOwnershipOf: raw)
        let x509 = certificate.pointer

        guard X509_set_version(x509, 2) == 1,  // v3
            ASN1_INTEGER_set(X509_get_serialNumber(x509), Int.random(in: 1...Int(Int32.max))) == 1,
            ASN1_TIME_set(X509_getm_notBefore(x509), time_t(notBefore.timeIntervalSince1970)) != nil,
            ASN1_TIME_set(X509_getm_notAfter(x509), time_t(notAfter.timeIntervalSince1970)) != nil,
            X509_set_pubkey(x509, subjectKey.pointer) == 1
        else {
            throw TestCAError("cannot fill the certificate: \(openSSLErrorReason())")
        }

        let commonName = Array(subjectCommonName.utf8)
        guard let subject = X509_get_subject_name(x509),
            X509_NAME_add_entry_by_txt(subject, "CN", httpdns_MBSTRING_UTF8(), commonName, CInt(commonName.count), -1, 0) == 1
        else {
            throw TestCAError("cannot set the subject: \(openSSLErrorReason())")
        }
        let issuerName = issuer.map { X509_get_subject_name($0.pointer) } ?? subject
        guard X509_set_issuer_name(x509, issuerName) == 1 else {
            throw TestCAError("cannot set the issuer: \(openSSLErrorReason())")
        }

        var v3 = X509V3_CTX()
        X509V3_set_ctx(&v3, issuer?.pointer ?? x509, x509, nil, nil, 0)
        for (nid, value) in extensions {
            guard let ext = X509V3_EXT_conf_nid(nil, &v3, nid, value) else {
                throw TestCAError("cannot build extension \(nid)=\(value): \(openSSLErrorReason())")
            }
            defer { X509_EXTENSION_free(ext) }
            guard X509_add_ext(x509, ext, -1) == 1 else {
                throw TestCAError("cannot add extension \(nid): \(openSSLErrorReason())")
            }
        }

        guard X509_sign(x509, issuerKey.pointer, EVP_sha256()) > 0 else {
            throw TestCAError("cannot sign the certificate: \(openSSLErrorReason())")
        }
        return certificate
    }
}
