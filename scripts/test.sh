#!/usr/bin/env bash
# Builds everything (debug) and runs the whole test suite: the deployment files' linters, the
# benchmark tool's lint and unit tests, then `swift test`: unit tests, end-to-end tests that start
# the real binary on loopback ports, and the netns sidecar, transparent-interception and node-tier
# fleet scenarios (NamespaceScenarioTests, as root; reported as skipped otherwise). Ends with the
# list of the tests that were skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
export TEST_TOOLS_VENV="${TEST_TOOLS_VENV:-$HOME/.cache/httpdns-proxy/test-tools}"
export PATH="$PATH:$TEST_TOOLS_VENV/bin"
bash scripts/ensure-deps.sh --with-test-tools
bash scripts/lint-deploy.sh
# The Python under bench/ and scripts/ linted (ruff.toml), every shell script there checked, and
# the benchmark tool's unit tests: among them, the docs' tables equal what `bench/bench report`
# renders from the committed bench/results.
ruff check bench scripts
mapfile -t shell_scripts < <(git ls-files bench scripts | while read -r f; do
  case "$f" in *.sh) echo "$f" ;; *) head -n 1 "$f" | grep -qE '^#!.*[/ ](ba)?sh$' && echo "$f" ;; esac
done)
shellcheck -x "${shell_scripts[@]}"
python3 -m unittest discover -s bench/tests -t .
# Every target imports exactly what Package.swift declares for it (SwiftPM's own
# --explicit-target-dependency-import-check lets a transitively reachable module through).
python3 scripts/check-imports.py
swift build --build-tests
# The fuzz target exists only with HTTPDNS_PROXY_FUZZ=1 (libFuzzer supplies its main), so no other
# build compiles it: compile it here (no link, no sanitizer; seconds, since the modules it reads are
# built) so that moving the parsers between modules cannot break it unseen.
HTTPDNS_PROXY_FUZZ=1 swift build --target ParserFuzz
# Still one test at a time. The end-to-end suites, whose helpers block (a child process, a log
# line, a socket), run on threads of their own (`.onBlockingThreads`), so they no longer starve the
# async tests of the concurrency pool (two threads wide on two cores); but in parallel, end-to-end
# tests waiting for one of those threads can still exceed their time limits on a loaded machine.
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
swift test --skip-build --no-parallel "$@" 2>&1 | tee "$log" || status=$?
# A skip is never mistaken for a pass: every skipped test (swift-testing's "skipped" lines, the
# namespace scenarios among them when not root) is listed again at the end.
skipped="$(grep -E '^.{0,4}Test .* (skipped|was cancelled)' "$log" || true)"
if [ -n "$skipped" ]; then
  printf '\n################ SKIPPED (%s) ################\n%s\n' "$(printf '%s\n' "$skipped" | wc -l)" "$skipped"
fi
# A failure is listed again at the end too (with the issue it recorded), so that the tail of the
# log, which is all a CI summary may keep, names what failed.
if [ "$status" -ne 0 ]; then
  failed="$(grep -E '^.{0,4}(Test .* (failed|recorded an issue)|Suite .* failed)|error: |XCTAssert|: error' "$log" | grep -v ' passed after ' | head -n 60 || true)"
  printf '\n################ FAILED (swift test exited %s) ################\n%s\n' "$status" "$failed"
  exit "$status"
fi
# Heap allocations per keep-alive request of a release build, held to bench/alloc-thresholds.json
# (a count, not a time: one allocation more per request fails here). Builds in .build-bench.
allocs_results="$(mktemp -d)"
python3 -m bench allocs --check --results "$allocs_results" --out "$allocs_results"
rm -rf "$allocs_results"
