#ifndef HTTPDNS_PROXY_COPENSSL_SHIM_H
#define HTTPDNS_PROXY_COPENSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <openssl/crypto.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
// HTTPDNS Tencent provider: the legacy provider for DES.
#include <openssl/provider.h>

// ---- OpenSSLTLS / TLSTestSupport: function wrappers for OpenSSL macros Swift cannot import ----

static inline long httpdns_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}

static inline long httpdns_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_min_proto_version(ctx, version);
}

/// Client-side session cache, without OpenSSL's internal store: the Swift owner keeps the sessions.
static inline long httpdns_SSL_CTX_enable_client_session_cache(SSL_CTX *ctx) {
    return SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
}

/// No renegotiation, no compression (both also OpenSSL 3 defaults for a client, made explicit).
static inline void httpdns_SSL_CTX_set_client_options(SSL_CTX *ctx) {
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
}

static inline int httpdns_SSL_get_ex_new_index(void) {
    return SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
}

static inline long httpdns_BIO_get_mem_data(BIO *bio, char **data) {
    return BIO_get_mem_data(bio, data);
}

/// EVP_EC_gen is a macro over the variadic EVP_PKEY_Q_keygen.
static inline EVP_PKEY *httpdns_EVP_PKEY_generate_p256(void) {
    return EVP_EC_gen("P-256");
}

static inline int httpdns_MBSTRING_UTF8(void) {
    return MBSTRING_UTF8;
}

// ---- OpenSSLTLS server side (the TLS listener) ----

typedef int (*httpdns_servername_callback)(SSL *ssl, int *alert, void *arg);

/// The SNI callback and its argument (both macros over SSL_CTX_callback_ctrl / SSL_CTX_ctrl).
static inline long httpdns_SSL_CTX_set_servername_callback(SSL_CTX *ctx, httpdns_servername_callback callback, void *arg) {
    SSL_CTX_set_tlsext_servername_arg(ctx, arg);
    return SSL_CTX_set_tlsext_servername_callback(ctx, callback);
}

/// No renegotiation, no compression; the server's cipher order wins.
static inline void httpdns_SSL_CTX_set_server_options(SSL_CTX *ctx) {
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
}

// ---- HTTPDNS (Alibaba v2): AES-GCM tag handling; the control codes are macros ----

static inline int httpdns_EVP_CIPHER_CTX_get_gcm_tag(EVP_CIPHER_CTX *ctx, unsigned char *tag, int length) {
    return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, length, tag);
}

static inline int httpdns_EVP_CIPHER_CTX_set_gcm_tag(EVP_CIPHER_CTX *ctx, unsigned char *tag, int length) {
    return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, length, tag);
}

/// Objects (certificates, CRLs) in a trust store: how many anchors a context holds.
static inline int httpdns_X509_STORE_object_count(X509_STORE *store) {
    return sk_X509_OBJECT_num(X509_STORE_get0_objects(store));
}

#endif
