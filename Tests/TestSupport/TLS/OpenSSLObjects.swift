import COpenSSL

/// Owns an `X509`.
final class OwnedX509 {
    let pointer: OpaquePointer
    init(takingOwnershipOf pointer: OpaquePointer) { self.pointer = pointer }
    deinit { X509_free(self.pointer) }

    convenience init(pem: String) throws(TestCAError) {
        let bio = try OwnedBIO(readingFrom: pem)
        guard let x509 = PEM_read_bio_X509(bio.pointer, nil, nil, nil) else {
            throw TestCAError("cannot parse PEM certificate: \(openSSLErrorReason())")
        }
        self.init(takingOwnershipOf: x509)
    }

    func pem() throws(TestCAError) -> String {
        let bio = try OwnedBIO()
        guard PEM_write_bio_X509(bio.pointer, self.pointer) == 1 else {
            throw TestCAError("cannot write PEM certificate: \(openSSLErrorReason())")
        }
        return bio.contents()
    }
}

/// Owns an `EVP_PKEY`.
final class OwnedPrivateKey {
    let pointer: OpaquePointer
    init(takingOwnershipOf pointer: OpaquePointer) { self.pointer = pointer }
    deinit { EVP_PKEY_free(self.pointer) }

    static func generateP256() throws(TestCAError) -> OwnedPrivateKey {
        guard let key = httpdns_EVP_PKEY_generate_p256() else {
            throw TestCAError("cannot generate a P-256 key: \(openSSLErrorReason())")
        }
        return OwnedPrivateKey(takingOwnershipOf: key)
    }

    convenience init(pem: String) throws(TestCAError) {
        let bio = try OwnedBIO(readingFrom: pem)
        guard let key = PEM_read_bio_PrivateKey(bio.pointer, nil, nil, nil) else {
            throw TestCAError("cannot parse PEM private key: \(openSSLErrorReason())")
        }
        self.init(takingOwnershipOf: key)
    }

    /// PKCS#8 PEM ("BEGIN PRIVATE KEY").
    func pem() throws(TestCAError) -> String {
        let bio = try OwnedBIO()
        guard PEM_write_bio_PrivateKey(bio.pointer, self.pointer, nil, nil, 0, nil, nil) == 1 else {
            throw TestCAError("cannot write PEM private key: \(openSSLErrorReason())")
        }
        return bio.contents()
    }
}

/// Owns a memory `BIO`.
final class OwnedBIO {
    let pointer: OpaquePointer
    /// Keeps the bytes of a read-only memory BIO alive.
    private let backing: UnsafeMutableRawBufferPointer?

    /// An empty, writable memory BIO.
    init() throws(TestCAError) {
        guard let bio = BIO_new(BIO_s_mem()) else { throw TestCAError("BIO_new failed") }
        self.pointer = bio
        self.backing = nil
    }

    /// A read-only memory BIO over a copy of `text`.
    init(readingFrom text: String) throws(TestCAError) {
        let bytes = Array(text.utf8)
        let backing = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 1)
        backing.copyBytes(from: bytes)
        guard let bio = BIO_new_mem_buf(backing.baseAddress, CInt(bytes.count)) else {
            backing.deallocate()
            throw TestCAError("BIO_new_mem_buf failed")
        }
        self.pointer = bio
        self.backing = backing
    }

    deinit {
        BIO_free(self.pointer)
        self.backing?.deallocate()
    }

    func contents() -> String {
        var data: UnsafeMutablePointer<CChar>?
        let length = httpdns_BIO_get_mem_data(self.pointer, &data)
        guard let data, length > 0 else { return "" }
        return data.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }
}

/// The last reason on this thread's OpenSSL error queue (and clears it).
func openSSLErrorReason() -> String {
    var reason = "unknown OpenSSL error"
    while true {
        let code = ERR_get_error()
        if code == 0 { break }
        if let text = ERR_reason_error_string(code) { reason = String(cString: text) }
    }
    return reason
}
