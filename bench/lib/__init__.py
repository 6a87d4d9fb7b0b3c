"""What every benchmark shares: processes and ports (proc), /proc readings (procfs), the peers'
configurations (peers), tools and builds (tools), wrk (wrk) and the results files (results)."""
