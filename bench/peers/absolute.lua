-- wrk script for the load benchmarks (bench/bench run, ab, pinned).
--   BENCH_TARGET  what goes in the request line: an absolute URI for a proxy
--                 (http://origin.test:PORT/1k) or a path for the direct run (/1k)
--   BENCH_HOST    the Host header (origin.test:PORT, 127.0.0.1:PORT)
--   BENCH_PROXY_AUTHORIZATION  optional: a Proxy-Authorization value to send
--                 ("Basic dXNlcjpwYXNz"; bench/bench ab --proxy-user). A proxy without
--                 authentication strips the field, so both sides of an A/B get it.
--   BENCH_CONNECTION_CLOSE  optional: "1" sends Connection: close, so every request
--                 opens a connection of its own (bench/bench ab --connection-close)
-- The request is built once per thread (no per-request Lua), so wrk's own cost
-- stays as low as for a plain URL. done() prints one JSON line prefixed with
-- "BENCH_JSON " that the harness parses: requests, duration, errors (socket
-- errors by kind, and status = responses with status > 399) and latency
-- percentiles in microseconds.

local target = os.getenv("BENCH_TARGET")
local host = os.getenv("BENCH_HOST")
if target == nil or host == nil then
  error("set BENCH_TARGET and BENCH_HOST")
end
wrk.method = "GET"
wrk.path = target
wrk.headers["Host"] = host
if os.getenv("BENCH_CONNECTION_CLOSE") == "1" then
  wrk.headers["Connection"] = "close"
end
local auth = os.getenv("BENCH_PROXY_AUTHORIZATION")
if auth ~= nil and auth ~= "" then
  wrk.headers["Proxy-Authorization"] = auth
end

function done(summary, latency, requests)
  local e = summary.errors
  local p = function(q) return latency:percentile(q) end
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"mean":%.1f,"stdev":%.1f,"max":%d,"p50":%d,"p90":%d,"p99":%d,"p999":%d}}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, latency.stdev, latency.max, p(50), p(90), p(99), p(99.9)))
end
