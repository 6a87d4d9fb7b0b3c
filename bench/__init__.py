"""The benchmark tool: bench/bench COMMAND (see bench/__main__.py and docs/benchmarks.md)."""
