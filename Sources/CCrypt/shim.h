#ifndef HTTPDNS_PROXY_CCRYPT_SHIM_H
#define HTTPDNS_PROXY_CCRYPT_SHIM_H
// libxcrypt: crypt_r verifies htpasswd hashes (bcrypt, sha-crypt, yescrypt); crypt_checksalt
// tells a supported hash prefix from a legacy or unknown one.
#include <crypt.h>

static inline int httpdns_crypt_salt_invalid(void) { return CRYPT_SALT_INVALID; }
static inline int httpdns_crypt_salt_disabled(void) { return CRYPT_SALT_METHOD_DISABLED; }
#endif
