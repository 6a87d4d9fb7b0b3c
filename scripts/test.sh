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
# In parallel by default, at most four at a time (the end-to-end suites on threads of their own,
# `.onBlockingThreads`; the namespace scenarios as two `.serialized` chains): on 2 cores about
# 95 s against 200 s one at a time. TEST_PARALLEL=0 runs one test at a time. A test that fails
# under the load and passes alone below is reported FLAKY, not failed.
log="$(mktemp)"
retry_log="$(mktemp)"
xunit_dir="$(mktemp -d)"
trap 'rm -rf "$log" "$retry_log" "$xunit_dir"' EXIT
if [ "${TEST_PARALLEL:-1}" = "0" ]; then mode=(--no-parallel); else
  mode=(--parallel --experimental-maximum-parallelization-width 4)
fi
status=0
swift test --skip-build "${mode[@]}" --xunit-output "$xunit_dir/results.xml" "$@" 2>&1 | tee "$log" || status=$?
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
  # At most three failed tests are run once more, alone and one at a time: a test that fails
  # again fails the command; one that passes alone is reported as FLAKY (it failed under the
  # load of the whole run: its name and first failure stay above for whoever fixes it).
  mapfile -t again < <(python3 scripts/xunit-failures.py "$xunit_dir/results-swift-testing.xml" 2>/dev/null || true)
  if [ "${#again[@]}" -gt 0 ] && [ "${#again[@]}" -le 3 ] && [ "${TEST_RETRY:-1}" != "0" ]; then
    printf '\n################ RUNNING %s FAILED TEST(S) AGAIN, ALONE ################\n%s\n' "${#again[@]}" "$(printf '%s\n' "${again[@]}")"
    filter="$(IFS='|'; printf '%s' "${again[*]}")"
    retry_status=0
    swift test --skip-build --no-parallel --filter "$filter" 2>&1 | tee "$retry_log" || retry_status=$?
    if [ "$retry_status" -eq 0 ] && grep -qE 'Test run with [1-9][0-9]* tests? .*passed' "$retry_log"; then
      printf '\n################ FLAKY: failed in the whole run, passed alone ################\n%s\n' "$(printf '%s\n' "${again[@]}")"
      status=0
    fi
  fi
  if [ "$status" -ne 0 ]; then
    printf '\n################ FAILED (swift test exited %s) ################\n%s\n' "$status" "$failed"
    exit "$status"
  fi
fi
# Heap allocations per keep-alive request of a release build, held to bench/alloc-thresholds.json
# (a count, not a time: one allocation more per request fails here). Builds in .build-bench.
allocs_results="$(mktemp -d)"
python3 -m bench allocs --check --results "$allocs_results" --out "$allocs_results"
rm -rf "$allocs_results"
