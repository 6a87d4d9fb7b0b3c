-- wrk script for bench/bench tls: one absolute-form request line, built once per thread.
--   BENCH_TARGET  the request target, e.g. https://127.0.0.1:PORT/1k
--   BENCH_HOST    the Host header, e.g. 127.0.0.1:PORT
-- done() prints "BENCH_JSON {...}" with requests, duration, errors and latency (microseconds).
local target = os.getenv("BENCH_TARGET")
local host = os.getenv("BENCH_HOST")
if target == nil or host == nil then
  error("set BENCH_TARGET and BENCH_HOST")
end
wrk.method = "GET"
wrk.path = target
wrk.headers["Host"] = host

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"errors":%d,"status_errors":%d,"p50_us":%d,"p99_us":%d}\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(99)))
end
