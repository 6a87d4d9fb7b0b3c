/// The live admin page served at `/`: one self-contained HTML document (inline CSS and script, no
/// external assets, works offline). Every 2 s its script reads `/summary`, `/stats`, `/cache`, `/health/ips`,
/// `/audit`, `/errors` and `/metrics` from the same listener and redraws. Data goes into the DOM as text only
/// (`textContent`), never as markup: domain names come from clients.
enum AdminPage {
    static let contentType = "text/html; charset=utf-8"

    static let html = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:">
        <title>httpdns-proxy</title>
        <style>
        body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f4f6f9; }
        header { background: #1d2330; color: #fff; padding: 10px 20px; display: flex; gap: 20px; align-items: baseline; }
        header h1 { font-size: 18px; margin: 0; }
        main { padding: 12px 20px; display: grid; gap: 16px; }
        section { background: #fff; border-radius: 6px; padding: 12px 16px; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
        h2 { font-size: 15px; margin: 0 0 8px; }
        table { border-collapse: collapse; width: 100%; }
        th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #e4e7ec; vertical-align: top; }
        th { font-weight: 600; color: #4a5263; font-size: 12px; }
        td.num { text-align: right; font-variant-numeric: tabular-nums; }
        #status-classes th, #latency th { text-align: right; }
        .muted { color: #7a8294; }
        .ok { color: #18794e; } .bad { color: #c0392b; } .warn { color: #b7791f; }
        .figures { display: flex; gap: 32px; align-items: center; flex-wrap: wrap; }
        .figure b { font-size: 22px; display: block; }
        button { font: inherit; font-size: 12px; padding: 1px 8px; cursor: pointer; }
        #errors-wrap { max-height: 320px; overflow: auto; }
        svg { background: #fafbfc; border: 1px solid #e4e7ec; }
        </style>
        </head>
        <body>
        <header><h1>httpdns-proxy</h1><span id="health">…</span><span class="muted">updated <span id="updated">never</span></span></header>
        <main>
        \(overviewSection)
        \(transparentSection)
        <section id="traffic">
          <h2>Requests</h2>
          <div class="figures">
            <div class="figure"><b id="rps">–</b>requests/s</div>
            <div class="figure"><b id="eps">–</b>errors/s</div>
            <svg id="chart" width="480" height="90" viewBox="0 0 480 90" role="img" aria-label="requests and errors per second">
              <polyline id="chart-requests" fill="none" stroke="#2b6cb0" stroke-width="2" points=""></polyline>
              <polyline id="chart-errors" fill="none" stroke="#c0392b" stroke-width="2" points=""></polyline>
            </svg>
            <span id="metrics-status" class="muted">waiting for /metrics</span>
          </div>
        </section>
        <section>
          <h2>Domains</h2>
          <table id="domains">
            <thead><tr><th>domain</th><th>queries</th><th>cache hits</th><th>fallbacks</th><th>avg ms</th><th>max ms</th><th>last source</th><th>addresses (TTL left)</th><th></th></tr></thead>
            <tbody></tbody>
          </table>
          <p id="domains-empty" class="muted">no domains resolved yet</p>
        </section>
        <section>
          <h2>Upstream addresses</h2>
          <table id="ips">
            <thead><tr><th>address</th><th>state</th><th>connect EWMA ms</th><th>back-off left</th><th>successes</th><th>failures</th><th>last failure</th></tr></thead>
            <tbody></tbody>
          </table>
        </section>
        <section id="audit-section" hidden>
          <h2>System DNS disagreements</h2>
          <p id="audit-summary" class="muted"></p>
          <table id="audit">
            <thead><tr><th>when</th><th>domain</th><th>kind</th><th>HTTPDNS</th><th>system DNS</th></tr></thead>
            <tbody></tbody>
          </table>
        </section>
        <section>
          <h2>Recent errors</h2>
          <p id="errors-summary" class="muted">waiting for /errors</p>
          <div id="errors-wrap"><table id="errors">
            <thead><tr><th>when (UTC)</th><th>client</th><th>request</th><th>dialed IP</th><th>error</th><th>status</th><th>reason</th></tr></thead>
            <tbody></tbody>
          </table></div>
        </section>
        </main>
        <script>
        "use strict";
        var REFRESH_MS = 2000, POINTS = 60;
        var previous = null, series = [];

        function el(tag, text, cls) {
          var e = document.createElement(tag);
          if (text !== undefined && text !== null) e.textContent = String(text);
          if (cls) e.className = cls;
          return e;
        }
        function num(tag, value) { return el(tag, value, "num"); }
        function ms(v) { return v === null || v === undefined ? "–" : (Math.round(v * 10) / 10).toString(); }
        function secs(v) { return Math.max(0, Math.round(v)) + " s"; }
        function getJSON(path) {
          return fetch(path, { cache: "no-store" }).then(function (r) {
            if (!r.ok) throw new Error(path + ": " + r.status);
            return r.json();
          });
        }

        // Prometheus text: sums of each counter, and the error counter per reason.
        function parseMetrics(text) {
          var out = { requests: 0, errors: 0, byReason: {}, seen: false };
          text.split("\\n").forEach(function (line) {
            if (line === "" || line.charAt(0) === "#") return;
            var m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{([^}]*)\\})?\\s+(\\S+)/.exec(line);
            if (!m) return;
            var value = parseFloat(m[4]);
            if (!isFinite(value)) return;
            if (m[1] === "httpdns_proxy_requests_total") { out.requests += value; out.seen = true; }
            if (m[1] === "httpdns_proxy_request_errors_total") {
              out.errors += value;
              var reason = /reason="((?:[^"\\\\]|\\\\.)*)"/.exec(m[3] || "");
              var key = reason ? reason[1] : "unknown";
              out.byReason[key] = (out.byReason[key] || 0) + value;
            }
          });
          return out;
        }

        function drawChart() {
          var max = 1;
          series.forEach(function (p) { max = Math.max(max, p.rps, p.eps); });
          function line(field) {
            return series.map(function (p, i) {
              var x = (POINTS - series.length + i) * (480 / (POINTS - 1));
              var y = 88 - (p[field] / max) * 84;
              return x.toFixed(1) + "," + y.toFixed(1);
            }).join(" ");
          }
          document.getElementById("chart-requests").setAttribute("points", line("rps"));
          document.getElementById("chart-errors").setAttribute("points", line("eps"));
        }

        function renderMetrics(text) {
          var status = document.getElementById("metrics-status");
          if (text === null) {
            status.textContent = "metrics unavailable (no /metrics on this build)";
            return;
          }
          var m = parseMetrics(text);
          if (!m.seen) { status.textContent = "metrics unavailable (no request counters in /metrics)"; return; }
          status.textContent = "";
          var now = performance.now();
          if (previous) {
            var dt = (now - previous.at) / 1000;
            if (dt > 0) {
              var rps = Math.max(0, (m.requests - previous.requests) / dt);
              var eps = Math.max(0, (m.errors - previous.errors) / dt);
              document.getElementById("rps").textContent = rps.toFixed(1);
              document.getElementById("eps").textContent = eps.toFixed(1);
              series.push({ rps: rps, eps: eps });
              if (series.length > POINTS) series.shift();
              drawChart();
            }
          }
          previous = { at: now, requests: m.requests, errors: m.errors };
        }

        function purge(host, button) {
          button.disabled = true;
          fetch("/cache?host=" + encodeURIComponent(host), { method: "DELETE" })
            .then(function () { refresh(true); })
            .catch(function () { button.disabled = false; });
        }

        function renderDomains(stats, cache) {
          var entries = {};
          (cache.entries || []).forEach(function (e) { entries[e.name] = e; });
          var rows = {};
          (stats.domains || []).forEach(function (d) { rows[d.name] = d; });
          Object.keys(entries).forEach(function (name) { if (!rows[name]) rows[name] = { name: name }; });
          var names = Object.keys(rows).sort();
          var body = document.querySelector("#domains tbody");
          body.textContent = "";
          names.forEach(function (name) {
            var d = rows[name], e = entries[name];
            var errors = 0;
            Object.keys(d.errorsByKind || {}).forEach(function (k) { errors += d.errorsByKind[k]; });
            var tr = el("tr");
            tr.setAttribute("data-domain", name);
            tr.appendChild(el("td", name, "name"));
            tr.appendChild(el("td", d.queries || 0, "num queries"));
            tr.appendChild(el("td", d.cacheHits || 0, "num cache-hits"));
            tr.appendChild(el("td", d.fallbacksToSystem || 0, "num fallbacks"));
            tr.appendChild(el("td", ms(d.avgResolveMs), "num avg-ms"));
            tr.appendChild(el("td", ms(d.maxResolveMs), "num max-ms"));
            tr.appendChild(el("td", d.lastSource || "–", "last-source"));
            var addresses = el("td", null, "addresses");
            if (e) {
              if (e.negative) addresses.appendChild(el("div", "negative: " + e.negative + " (" + secs(e.remaining) + ")", "warn"));
              (e.ipv4 || []).concat(e.ipv6 || []).forEach(function (ip) {
                addresses.appendChild(el("div", ip + " (" + secs(e.remaining) + ")" + (e.stale ? " stale" : "")));
              });
            } else {
              addresses.appendChild(el("span", "not cached", "muted"));
            }
            tr.appendChild(addresses);
            var action = el("td");
            if (e) {
              var button = el("button", "purge");
              button.title = "forget the cached answer and close pooled connections to " + name;
              button.addEventListener("click", function () { purge(name, button); });
              action.appendChild(button);
            }
            tr.appendChild(action);
            if (errors > 0) tr.className = "has-errors";
            body.appendChild(tr);
          });
          document.getElementById("domains-empty").style.display = names.length ? "none" : "";
        }

        function renderIPs(health) {
          var body = document.querySelector("#ips tbody");
          body.textContent = "";
          (health.ips || []).forEach(function (ip) {
            var address = ip.ip.indexOf(":") >= 0 ? "[" + ip.ip + "]:" + ip.port : ip.ip + ":" + ip.port;
            var tr = el("tr");
            tr.setAttribute("data-ip", address);
            tr.appendChild(el("td", address));
            var state = String(ip.state);
            tr.appendChild(el("td", state, state === "healthy" ? "ok" : "bad"));
            tr.appendChild(el("td", ms(ip.connectMsEWMA), "num"));
            tr.appendChild(el("td", ip.backoffRemainingMs ? secs(ip.backoffRemainingMs / 1000) : "–", "num"));
            tr.appendChild(el("td", ip.successes || 0, "num"));
            tr.appendChild(el("td", ip.failures || 0, "num"));
            tr.appendChild(el("td", ip.lastFailure || "–"));
            body.appendChild(tr);
          });
        }

        function renderAudit(audit) {
          var section = document.getElementById("audit-section");
          section.hidden = !audit || audit.comparisons === undefined;
          if (section.hidden) return;
          document.getElementById("audit-summary").textContent = audit.comparisons + " compared, " + audit.disagreements + " disagreed"
            + (audit.dropped ? ", " + audit.dropped + " not compared (queue full)" : "");
          var body = document.querySelector("#audit tbody");
          body.textContent = "";
          (audit.recent || []).forEach(function (d) {
            var tr = el("tr");
            tr.setAttribute("data-audit-host", d.host);
            tr.appendChild(el("td", d.at));
            tr.appendChild(el("td", d.host));
            tr.appendChild(el("td", d.kind, "bad"));
            tr.appendChild(el("td", (d.httpdns || []).join(" ")));
            tr.appendChild(el("td", d.systemError || (d.system || []).join(" ")));
            body.appendChild(tr);
          });
        }

        // The server's ring of the last failed requests and tunnels: errors from before the page
        // was opened are there too.
        function renderErrors(report) {
          var summary = document.getElementById("errors-summary");
          var body = document.querySelector("#errors tbody");
          body.textContent = "";
          if (!report || report.total === undefined) { summary.textContent = "/errors unavailable"; return; }
          var errors = report.errors || [];
          summary.textContent = report.total === 0 ? "none since the proxy started"
            : report.total + " since the proxy started" + (report.total > errors.length ? "; the last " + errors.length + " shown" : "");
          errors.forEach(function (e) {
            var tr = el("tr");
            tr.setAttribute("data-error-kind", e.kind);
            tr.appendChild(el("td", String(e.at).replace("T", " ").replace("Z", "")));
            tr.appendChild(el("td", e.client));
            tr.appendChild(el("td", (e.method ? e.method + " " : "") + (e.target || "–"), "target"));
            tr.appendChild(el("td", e.ip || "–", "ip"));
            tr.appendChild(el("td", e.kind, "bad kind"));
            tr.appendChild(el("td", e.status || "–", "num status"));
            tr.appendChild(el("td", e.reason, "reason"));
            body.appendChild(tr);
          });
        }

        \(overviewScript)
        \(transparentScript)

        var timer = null;
        function refresh(once) {
          var health = fetch("/healthz", { cache: "no-store" }).then(function (r) { return r.ok ? "ok" : "draining"; }, function () { return "unreachable"; });
          var metrics = fetch("/metrics", { cache: "no-store" }).then(function (r) { return r.ok ? r.text() : null; }, function () { return null; });
          var empty = function () { return {}; };
          Promise.all([health, getJSON("/stats").catch(empty), getJSON("/cache").catch(empty), getJSON("/health/ips").catch(empty), metrics, getJSON("/audit").catch(empty), getJSON("/errors").catch(empty), getJSON("/summary").catch(empty)])
            .then(function (r) {
              var h = document.getElementById("health");
              h.textContent = r[0];
              h.className = r[0] === "ok" ? "ok" : "bad";
              renderDomains(r[1], r[2]);
              renderIPs(r[3]);
              renderMetrics(r[4]);
              renderAudit(r[5]);
              renderErrors(r[6]);
              renderSummary(r[7]);
              renderTransparent(r[1]);
              document.getElementById("updated").textContent = new Date().toLocaleTimeString();
              document.body.setAttribute("data-refreshes", String(Number(document.body.getAttribute("data-refreshes") || 0) + 1));
            })
            .finally(function () {
              if (once === true) return;
              timer = setTimeout(refresh, REFRESH_MS);
            });
        }
        refresh();
        </script>
        </body>
        </html>

        """
}
