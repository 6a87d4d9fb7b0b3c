#ifndef HTTPDNS_PROXY_CCURL_SHIM_H
#define HTTPDNS_PROXY_CCURL_SHIM_H
#include <curl/curl.h>
#endif
