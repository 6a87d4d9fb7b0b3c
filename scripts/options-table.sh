#!/usr/bin/env bash
# Regenerates the options table of docs/configuration.md from the option registry
# (Sources/ProxyConfig/ConfigOption+*.swift): the text between the table markers is replaced by
# what `httpdns-proxy config options-table` prints. DocumentationTests fails while the checked-in
# table differs, so run this after changing an option.
#   scripts/options-table.sh            # uses .build/debug/httpdns-proxy, building it if missing
#   HTTPDNS_PROXY_BIN=path scripts/options-table.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${HTTPDNS_PROXY_BIN:-.build/debug/httpdns-proxy}"
if [[ ! -x "$bin" ]]; then
    swift build --product httpdns-proxy
fi
doc=docs/configuration.md
tmp="$(mktemp)"
trap 'rm -f "$tmp"' EXIT
"$bin" config options-table --splice "$doc" > "$tmp"
if cmp -s "$tmp" "$doc"; then
    echo "$doc: options table up to date"
else
    cat "$tmp" > "$doc"
    echo "$doc: options table regenerated"
fi
