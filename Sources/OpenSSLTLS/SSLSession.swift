import COpenSSL

/// Owns one reference to an `SSL_SESSION`.
///
/// Sessions are immutable once stored (the cache keeps its own duplicate, see
/// `TLSClientContext`), and OpenSSL reference-counts them atomically, so sharing across
/// event loops is safe.
final class SSLSession: @unchecked Sendable {
    let pointer: OpaquePointer

    /// Takes ownership of one reference to `pointer`.
    init(takingOwnershipOf pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        SSL_SESSION_free(self.pointer)
    }
}
