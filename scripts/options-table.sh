#!/usr/bin/env bash
# Regenerates the options table and the full example file of docs/configuration.md from the option
# registry (Sources/ProxyConfig/ConfigOption+*.swift): the text between each pair of markers is
# replaced (`httpdns-proxy config options-table --splice`). DocumentationTests fails while the
# checked-in text differs, so run this after changing an option.
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
    echo "$doc: options table and example file up to date"
else
    cat "$tmp" > "$doc"
    echo "$doc: options table and example file regenerated"
fi
