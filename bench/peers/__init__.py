"""Peers the benchmarks start as processes of their own (python3 -m bench.peers.NAME), the wrk
scripts and the allocation counter."""
