/// The admin page's transparent-interception panel: `/stats` → `access.transparent` (shown only
/// when `--transparent-listen` is on): connections, what their first bytes were, hijacks counted,
/// fallbacks and refusals.
extension AdminPage {
    static let transparentSection = """
        <section id="transparent" hidden>
          <h2>Transparent interception</h2>
          <div class="figures">
            <div class="figure"><b id="transparent-accepted">–</b>connections redirected</div>
            <div class="figure"><b id="transparent-hijacks">–</b>hijacks (dialed address not among HTTPDNS's)</div>
            <div class="figure"><b id="transparent-fallbacks">–</b>no HTTPDNS answer: to the original destination</div>
            <div class="figure"><b id="transparent-refused">–</b>refused or failed</div>
            <div class="figure"><b id="transparent-unredirected">–</b>not redirected (closed)</div>
          </div>
          <table id="transparent-peeks"><thead><tr><th>first bytes</th><th>connections</th></tr></thead><tbody></tbody></table>
        </section>
        """

    static let transparentScript = """
        function renderTransparent(stats) {
          var t = stats && stats.access && stats.access.transparent;
          var section = document.getElementById("transparent");
          section.hidden = !t;
          if (!t) return;
          setText("#transparent-accepted", t.accepted);
          setText("#transparent-hijacks", t.hijacks);
          setText("#transparent-fallbacks", t.fallbacks);
          setText("#transparent-refused", t.refused);
          setText("#transparent-unredirected", t.noOriginalDestination);
          var body = document.querySelector("#transparent-peeks tbody");
          body.textContent = "";
          Object.keys(t.peeks || {}).sort().forEach(function (name) {
            var tr = el("tr");
            tr.setAttribute("data-peek", name);
            tr.appendChild(el("td", name));
            tr.appendChild(el("td", String(t.peeks[name])));
            body.appendChild(tr);
          });
        }
        """
}
