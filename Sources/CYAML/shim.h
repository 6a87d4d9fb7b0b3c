#ifndef HTTPDNS_PROXY_CYAML_SHIM_H
#define HTTPDNS_PROXY_CYAML_SHIM_H
// libyaml, the reference C parser (the one Yams vendors): the config file is read through its
// event API (ProxyConfig/YAMLReader.swift).
#include <yaml.h>
#endif
