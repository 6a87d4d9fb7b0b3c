#!/usr/bin/env bash
# Builds everything (debug) and runs the whole test suite: unit tests and end-to-end tests that
# start the real binary on loopback ports.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh --with-test-tools
swift build --build-tests
swift test --skip-build "$@"
