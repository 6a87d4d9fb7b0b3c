#!/usr/bin/env bash
# Builds everything (debug) and runs the whole test suite: the deployment files' linters, the
# netns sidecar test (as root; SKIPPED otherwise), then unit tests and end-to-end tests that start
# the real binary on loopback ports.
set -euo pipefail
cd "$(dirname "$0")/.."
export TEST_TOOLS_VENV="${TEST_TOOLS_VENV:-$HOME/.cache/httpdns-proxy/test-tools}"
export PATH="$PATH:$TEST_TOOLS_VENV/bin"
bash scripts/ensure-deps.sh --with-test-tools
bash scripts/lint-deploy.sh
swift build --build-tests
bash scripts/netns-test.sh "$(swift build --show-bin-path)/httpdns-proxy"
swift test --skip-build "$@"
