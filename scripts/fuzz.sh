#!/usr/bin/env bash
# Fuzzes the parsers that read attacker bytes with libFuzzer (Swift's -sanitize=fuzzer,address).
#
#   scripts/fuzz.sh TARGET SECONDS     one target
#   scripts/fuzz.sh all SECONDS        every target in turn, SECONDS each
#
# Targets: request-target, header-rewriter, dns-wire, doh-json, alibaba-json, static-list, client-hello, dns-query,
# codec-request, codec-response (Fuzz/ParserFuzz/ParserFuzz.swift says what each feeds and which invariants it
# asserts; the codec targets compare the HTTP1Codec module with today's stack and trap on a disagreement).
# The committed seed corpus is Fuzz/corpus/TARGET; new inputs go to .build-fuzz/corpus/TARGET,
# crashes to .build-fuzz/crashes/TARGET/. Not run by CI: it is a tool, its findings become
# regression unit tests.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=(request-target header-rewriter dns-wire doh-json alibaba-json static-list client-hello dns-query codec-request codec-response)
target=${1:?usage: scripts/fuzz.sh TARGET|all SECONDS}
seconds=${2:?usage: scripts/fuzz.sh TARGET|all SECONDS}

bash scripts/ensure-deps.sh
HTTPDNS_PROXY_FUZZ=1 swift build --scratch-path .build-fuzz --product ParserFuzz \
  -Xswiftc -sanitize=fuzzer,address -Xswiftc -enable-testing >&2
binary=.build-fuzz/debug/ParserFuzz
# libFuzzer reports crashes itself; the Swift backtracer would symbolicate for minutes first.
export SWIFT_BACKTRACE=enable=no

run_one() {
  local name=$1
  local work=.build-fuzz/corpus/$name crashes=.build-fuzz/crashes/$name log=.build-fuzz/fuzz-$name.log
  mkdir -p "$work" "$crashes" "Fuzz/corpus/$name"
  local status=0
  FUZZ_TARGET=$name "$binary" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$crashes/" "$work" "Fuzz/corpus/$name" > "$log" 2>&1 || status=$?
  local runs corpus found
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
  corpus=$(find "$work" -type f | wc -l)
  found=$(find "$crashes" -type f | wc -l)
  echo "$name: ${seconds}s, $runs executions, corpus $corpus, crashes $found (exit $status; log $log)"
  [ "$found" -eq 0 ]
}

failed=0
if [ "$target" = all ]; then
  for name in "${TARGETS[@]}"; do run_one "$name" || failed=1; done
else
  run_one "$target" || failed=1
fi
exit $failed
