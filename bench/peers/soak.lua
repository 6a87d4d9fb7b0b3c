-- wrk script for the soak test (bench/bench soak): one traffic mix per wrk process.
--   SOAK_TARGETS  comma-separated absolute URIs, cycled per request
--                 (http://origin.test:PORT/1k,http://origin.test:PORT/64k)
--   SOAK_METHOD   GET (default) or POST
--   SOAK_BODIES   POST only: comma-separated body sizes in bytes, cycled per request
--   SOAK_CLOSE    "1": every request says Connection: close (one request per connection)
--   SOAK_PROXY_AUTHORIZATION  optional Proxy-Authorization value
-- The requests are built once per thread; request() only picks the next one. response()
-- counts every complete response by status, so the soak can tell an expected 502 from an
-- unexpected one. done() prints one line "SOAK_JSON {...}": requests, duration, wrk's socket
-- errors by kind, and the statuses summed over all threads.

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

local function split(s)
  local out = {}
  for item in string.gmatch(s or "", "[^,]+") do
    table.insert(out, item)
  end
  return out
end

local reqs = {}
local n = 0
local i = 0

function init(args)
  statuses = {}
  local targets = split(os.getenv("SOAK_TARGETS"))
  if #targets == 0 then
    error("set SOAK_TARGETS")
  end
  local method = os.getenv("SOAK_METHOD") or "GET"
  local bodies = split(os.getenv("SOAK_BODIES"))
  local close = os.getenv("SOAK_CLOSE") == "1"
  local auth = os.getenv("SOAK_PROXY_AUTHORIZATION")
  -- one request per (target, body size) pair, so both lists are cycled together
  local count = #targets
  if method == "POST" and #bodies > count then
    count = #bodies
  end
  for k = 1, count do
    local target = targets[(k - 1) % #targets + 1]
    local host = string.match(target, "^https?://([^/]+)")
    local headers = { ["Host"] = host }
    if close then
      headers["Connection"] = "close"
    end
    if auth and auth ~= "" then
      headers["Proxy-Authorization"] = auth
    end
    local body = nil
    if method == "POST" then
      local size = tonumber(bodies[(k - 1) % math.max(#bodies, 1) + 1] or "1024")
      body = string.rep("b", size)
      headers["Content-Type"] = "application/octet-stream"
    end
    table.insert(reqs, wrk.format(method, target, headers, body))
  end
  n = #reqs
end

function request()
  i = i % n + 1
  return reqs[i]
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
  local all = {}
  for _, t in ipairs(threads) do
    local s = t:get("statuses")
    if s then
      for code, count in pairs(s) do
        all[code] = (all[code] or 0) + count
      end
    end
  end
  local parts = {}
  for code, count in pairs(all) do
    table.insert(parts, string.format('"%d":%d', code, count))
  end
  local e = summary.errors
  io.write(string.format(
    'SOAK_JSON {"requests":%d,"duration_us":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"statuses":{%s},"latency_us":{"p50":%d,"p99":%d,"max":%d}}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout, table.concat(parts, ","),
    latency:percentile(50), latency:percentile(99), latency.max))
end
