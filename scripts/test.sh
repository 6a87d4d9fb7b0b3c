#!/usr/bin/env bash
# Builds everything (debug) and runs the whole test suite: the deployment files' linters, the
# netns sidecar, transparent-interception and node-tier fleet tests (as root; SKIPPED otherwise),
# then unit tests and end-to-end tests that start the real binary on loopback ports.
set -euo pipefail
cd "$(dirname "$0")/.."
export TEST_TOOLS_VENV="${TEST_TOOLS_VENV:-$HOME/.cache/httpdns-proxy/test-tools}"
export PATH="$PATH:$TEST_TOOLS_VENV/bin"
bash scripts/ensure-deps.sh --with-test-tools
bash scripts/lint-deploy.sh
# Every target imports exactly what Package.swift declares for it (SwiftPM's own
# --explicit-target-dependency-import-check lets a transitively reachable module through).
python3 scripts/check-imports.py
swift build --build-tests
# The fuzz target exists only with HTTPDNS_PROXY_FUZZ=1 (libFuzzer supplies its main), so no other
# build compiles it: compile it here (no link, no sanitizer; seconds, since the modules it reads are
# built) so that moving the parsers between modules cannot break it unseen.
HTTPDNS_PROXY_FUZZ=1 swift build --target ParserFuzz
bash scripts/netns-test.sh "$(swift build --show-bin-path)/httpdns-proxy"
bash scripts/transparent-netns-test.sh "$(swift build --show-bin-path)/httpdns-proxy"
bash scripts/fleet-netns-test.sh "$(swift build --show-bin-path)/httpdns-proxy"
# One test at a time: many end-to-end helpers block while they wait for a child process or a
# socket, and with two cores the concurrency pool is two threads wide, so tests run in parallel
# could starve each other's async work into time-outs. The whole suite serially takes under a minute.
swift test --skip-build --no-parallel "$@"
