#ifndef HTTPDNS_PROXY_CCURL_SHIM_H
#define HTTPDNS_PROXY_CCURL_SHIM_H
#include <curl/curl.h>
#include <stdint.h>
#include <sys/socket.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

/* Names the calling thread (15 bytes at most; /proc/PID/task/TID/comm shows it). prctl is variadic,
 * which Swift cannot call. A no-op where there is no prctl. */
static inline void ccurl_name_current_thread(const char *name) {
#if defined(__linux__)
    prctl(PR_SET_NAME, name, 0, 0, 0);
#else
    (void)name;
#endif
}

/*
 * curl_easy_setopt / curl_easy_getinfo / curl_multi_setopt are variadic, and Swift cannot call
 * C variadics. These typed wrappers pin the argument type per call so the right type reaches
 * libcurl (passing an int where libcurl reads a long or curl_off_t is undefined behaviour).
 */

/* CURL_GLOBAL_DEFAULT is a macro expression Swift does not import. */
static inline CURLcode ccurl_global_init_default(void) {
    return curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* libcurl's own version number ("7.88.1"). curl_version() would also ask libldap for its
 * version, which initialises SASL and dlopens its plugins; curl_version_info does not. */
static inline const char *ccurl_version_number(void) {
    curl_version_info_data *info = curl_version_info(CURLVERSION_NOW);
    return info && info->version ? info->version : "unknown";
}

/* libcurl's built-in trust-anchor directory (--with-ca-path); NULL when it has none. */
static inline const char *ccurl_builtin_capath(void) {
    curl_version_info_data *info = curl_version_info(CURLVERSION_NOW);
    return info ? info->capath : NULL;
}

static inline CURLcode ccurl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

/* libcurl copies string options (except CURLOPT_POSTFIELDS, which we never use). */
static inline CURLcode ccurl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

/* For CURLOPT_COPYPOSTFIELDS with binary data (size set first via CURLOPT_POSTFIELDSIZE_LARGE). */
static inline CURLcode ccurl_easy_setopt_bytes(CURL *handle, CURLoption option, const void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

/* The list is NOT copied: it must outlive the transfer. */
static inline CURLcode ccurl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

/* CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION share this signature. */
static inline CURLcode ccurl_easy_setopt_write_callback(CURL *handle, CURLoption option, curl_write_callback callback) {
    return curl_easy_setopt(handle, option, callback);
}

/* CURLOPT_SOCKOPTFUNCTION: puts the netfilter mark carried in `clientp` (SO_MARK) on each
 * connection socket before it connects, so redirect rules can exempt the proxy's own traffic. */
static int ccurl_sockopt_mark(void *clientp, curl_socket_t fd, curlsocktype purpose) {
    unsigned int mark = (unsigned int)(uintptr_t)clientp;
    if (purpose == CURLSOCKTYPE_IPCXN && mark != 0
        && setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof mark) != 0) {
        return CURL_SOCKOPT_ERROR;
    }
    return CURL_SOCKOPT_OK;
}

static inline CURLcode ccurl_easy_set_socket_mark(CURL *handle, unsigned int mark) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_SOCKOPTFUNCTION, ccurl_sockopt_mark);
    if (code != CURLE_OK) return code;
    return curl_easy_setopt(handle, CURLOPT_SOCKOPTDATA, (void *)(uintptr_t)mark);
}

static inline CURLcode ccurl_easy_getinfo_long(CURL *handle, CURLINFO info, long *out) {
    return curl_easy_getinfo(handle, info, out);
}

/* The returned string is owned by the easy handle; copy it before the handle is cleaned up. */
static inline CURLcode ccurl_easy_getinfo_string(CURL *handle, CURLINFO info, const char **out) {
    return curl_easy_getinfo(handle, info, (char **)out);
}

static inline CURLcode ccurl_easy_getinfo_double(CURL *handle, CURLINFO info, double *out) {
    return curl_easy_getinfo(handle, info, out);
}

static inline CURLcode ccurl_easy_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *out) {
    return curl_easy_getinfo(handle, info, out);
}

static inline CURLMcode ccurl_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
}

/* CURLMsg.data is a union; reading it from C avoids relying on how Swift imports it. */
static inline CURLcode ccurl_msg_result(const CURLMsg *message) {
    return message->data.result;
}

#endif
