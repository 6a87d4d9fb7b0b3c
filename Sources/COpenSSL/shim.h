#ifndef HTTPDNS_PROXY_COPENSSL_SHIM_H
#define HTTPDNS_PROXY_COPENSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <openssl/crypto.h>
#endif
