/// The admin page's overview: what `/summary` says about the proxy since it started (version,
/// uptime, connections against their limits, answers by status class, bytes, request-time
/// percentiles, the configuration in force). Everything comes from the server, so the page shows
/// what happened before it was opened.
extension AdminPage {
    static let overviewSection = """
        <section id="overview">
          <h2>Since the start</h2>
          <p id="summary-status" class="muted">waiting for /summary</p>
          <div class="figures">
            <div class="figure"><b id="version">–</b>version</div>
            <div class="figure"><b id="uptime">–</b>up since <span id="started-at">–</span></div>
            <div class="figure"><b id="connections">–</b>connections open / limit (per client <span id="per-client">–</span>)</div>
            <div class="figure"><b id="tunnels">–</b>tunnels open (within the connection limit)</div>
            <div class="figure"><b id="bytes">–</b>bytes up / down</div>
          </div>
          <table id="status-classes">
            <thead><tr><th>2xx</th><th>3xx</th><th>4xx</th><th>5xx</th><th>no answer</th><th>total</th></tr></thead>
            <tbody><tr><td class="num" data-class="2xx">–</td><td class="num" data-class="3xx">–</td><td class="num" data-class="4xx">–</td><td class="num" data-class="5xx">–</td><td class="num" data-class="none">–</td><td class="num" data-class="total">–</td></tr></tbody>
          </table>
          <table id="latency">
            <thead><tr><th>requests timed</th><th>p50</th><th>p90</th><th>p99</th><th>max</th></tr></thead>
            <tbody><tr><td class="num" data-p="count">–</td><td class="num" data-p="p50">–</td><td class="num" data-p="p90">–</td><td class="num" data-p="p99">–</td><td class="num" data-p="max">–</td></tr></tbody>
          </table>
          <details><summary>Configuration in force (secrets redacted)</summary>
            <table id="configuration"><thead><tr><th>setting</th><th>value</th><th>from</th></tr></thead><tbody></tbody></table>
          </details>
        </section>
        """

    static let overviewScript = """
        function since(seconds) {
          var s = Math.max(0, Math.floor(seconds)), d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
          return (d ? d + " d " : "") + (d || h ? h + " h " : "") + (d || h || m ? m + " min " : "") + (s % 60) + " s";
        }
        function size(n) {
          var units = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0;
          while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
          return (i ? n.toFixed(1) : String(n)) + " " + units[i];
        }
        function setText(selector, text) { var e = document.querySelector(selector); if (e) e.textContent = String(text); }
        function renderSummary(s) {
          var status = document.getElementById("summary-status");
          if (!s || s.version === undefined) { status.textContent = "/summary unavailable"; return; }
          status.textContent = "";
          setText("#version", s.version);
          setText("#uptime", since(s.uptimeSeconds));
          setText("#started-at", String(s.startedAt).replace("T", " ").replace("Z", " UTC"));
          setText("#connections", s.connections.open + " / " + s.connections.max);
          setText("#per-client", s.connections.maxPerClient);
          setText("#tunnels", s.connections.tunnels);
          setText("#bytes", size(s.requests.bytesUp) + " / " + size(s.requests.bytesDown));
          ["2xx", "3xx", "4xx", "5xx"].forEach(function (c) { setText("td[data-class='" + c + "']", s.requests.byClass[c] || 0); });
          setText("td[data-class='none']", s.requests.noAnswer);
          setText("td[data-class='total']", s.requests.total);
          setText("td[data-p='count']", s.latency.count);
          ["p50", "p90", "p99", "max"].forEach(function (p) {
            var v = s.latency[p + "Ms"];
            setText("td[data-p='" + p + "']", v === null || v === undefined ? "–" : ms(v) + " ms");
          });
          var body = document.querySelector("#configuration tbody");
          body.textContent = "";
          (s.configuration || []).forEach(function (setting) {
            var tr = el("tr");
            tr.setAttribute("data-setting", setting.name);
            tr.appendChild(el("td", setting.name));
            tr.appendChild(el("td", setting.value));
            tr.appendChild(el("td", setting.source + (setting.from ? " " + setting.from : "")));
            body.appendChild(tr);
          });
        }
        """
}
