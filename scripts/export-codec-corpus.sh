#!/usr/bin/env bash
# Writes the framing suite's cases (Tests/EndToEndTests/FramingSuiteTests.swift) to
# Fuzz/corpus/codec-request and Fuzz/corpus/codec-response: the seeds of the codec's differential
# fuzz targets (scripts/fuzz.sh codec-request|codec-response) and of DifferentialTests.corpus.
# Rerun it when the suite gains cases, and commit what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --build-tests >&2
HTTP1CODEC_EXPORT_CORPUS=1 swift test --skip-build --filter exportCodecCorpus >&2
echo "codec-request: $(find Fuzz/corpus/codec-request -type f | wc -l) files, codec-response: $(find Fuzz/corpus/codec-response -type f | wc -l) files"
