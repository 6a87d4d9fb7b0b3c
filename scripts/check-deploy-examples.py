#!/usr/bin/env python3
"""Checks the example credentials and environment of the deployment files (run by
scripts/lint-deploy.sh; needs PyYAML).

1. Every HTTPDNS_PROXY_* variable named in deploy/ and docker/ is an option documented in the
   options table of docs/configuration.md (a misspelt variable is silently ignored by the proxy).
2. docker/httpdns.env.example and deploy/kubernetes/secret.example.yaml, as shipped, and each
   provider block commented out in them, taken in place of the active provider lines, pass the
   proxy's start-up checks for the provider settings, so that copying an example never ends in a
   crash loop. The rules mirror ProxyConfig's ConfigurationLoader (checkAlibaba, checkTencent):
   provider alibaba needs an account ID; API v2 (the default) needs a hex secret key (an even
   number of hex digits) when a secret is set, and an AES key of 32 hex digits for cbc/gcm;
   v1 has no encryption; tencent needs its ID and the token (https mode) or the key (http mode).
   These are a copy of the Swift rules: when those change, change them here.
3. The sidecar and node-proxy manifests load the credentials Secret with `optional: true` (the
   default provider needs none), and the sidecar's admin listener is on loopback, probed with
   `httpdns-proxy healthcheck`. The node tier's doh-token and its sidecars' resolver-token come
   from one key of node-tier-token.example.yaml's Secret, optionally.
4. The sidecar example's app containers set NO_PROXY and no_proxy to the list docs/deployment.md
   gives (cluster names, loopback, the metadata services the SSRF guard refuses, ...).
5. The node proxy has what a node component needs (priority, tolerations, a surge update,
   resources), and its prometheus.io/* annotations and deploy/prometheus/servicemonitor.yaml (through
   the headless metrics Service) point at its admin listener's /metrics.
"""
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
failures = []


def fail(message):
    failures.append(message)
    print(f"  FAIL: {message}")


def ok(message):
    print(f"  ok:   {message}")


# ---- 1. documented variables -----------------------------------------------------------------
documented = set(re.findall(r"^\| `--[^`]+` \| `(HTTPDNS_PROXY_[A-Z0-9_]+)`",
                            (ROOT / "docs/configuration.md").read_text(), re.M))
if len(documented) < 30:
    fail(f"found only {len(documented)} options in docs/configuration.md's table: has its format changed?")
for path in sorted([*ROOT.glob("deploy/**/*.yaml"), *ROOT.glob("docker/*")]):
    if not path.is_file():
        continue
    names = set(re.findall(r"HTTPDNS_PROXY_[A-Z0-9_]+", path.read_text()))
    unknown = sorted(names - documented)
    rel = path.relative_to(ROOT)
    if unknown:
        fail(f"{rel} names variables that docs/configuration.md does not document: {', '.join(unknown)}")
    elif names:
        ok(f"{rel}: {len(names)} HTTPDNS_PROXY_* variables, all documented")


# ---- 2. the example credentials start --------------------------------------------------------
HEX = re.compile(r"^(?:[0-9a-fA-F]{2})+$")
PROVIDERS = {"alibaba", "json", "doh", "tencent", "static", "system"}


def start_error(env):
    """Why the proxy would refuse to start with these provider settings, or None."""
    provider = env.get("HTTPDNS_PROXY_PROVIDER", "json")
    if provider not in PROVIDERS:
        return f"provider {provider!r} is not one of {sorted(PROVIDERS)}"
    if provider == "alibaba":
        if not env.get("HTTPDNS_PROXY_ACCOUNT_ID"):
            return "provider alibaba needs HTTPDNS_PROXY_ACCOUNT_ID"
        api = env.get("HTTPDNS_PROXY_ALIBABA_API", "v2")
        encryption = env.get("HTTPDNS_PROXY_ALIBABA_ENCRYPTION", "none")
        if api not in ("v1", "v2") or encryption not in ("none", "cbc", "gcm"):
            return f"alibaba-api {api!r} / alibaba-encryption {encryption!r} not recognised"
        if api == "v1" and encryption != "none":
            return "alibaba-encryption needs API v2"
        if api == "v2":
            secret = env.get("HTTPDNS_PROXY_SECRET")
            if secret and not HEX.match(secret):
                return "API v2 (the default) signs with the hex-decoded secret, but HTTPDNS_PROXY_SECRET is not hex"
            if encryption != "none":
                key = env.get("HTTPDNS_PROXY_AES_KEY", "")
                if not re.fullmatch(r"[0-9a-fA-F]{32}", key):
                    return f"alibaba-encryption {encryption} needs HTTPDNS_PROXY_AES_KEY of 32 hex digits"
    if env.get("HTTPDNS_PROXY_RESOLVER_TOKEN") and provider not in ("doh", "json"):
        return f"HTTPDNS_PROXY_RESOLVER_TOKEN is sent by the doh and json providers only, not {provider}"
    if provider == "tencent":
        if not env.get("HTTPDNS_PROXY_TENCENT_ID"):
            return "provider tencent needs HTTPDNS_PROXY_TENCENT_ID"
        mode = env.get("HTTPDNS_PROXY_TENCENT_MODE", "https")
        needed = "HTTPDNS_PROXY_TENCENT_TOKEN" if mode == "https" else "HTTPDNS_PROXY_TENCENT_KEY"
        if not env.get(needed):
            return f"tencent-mode {mode} needs {needed}"
    return None


def variants(active, commented):
    """The settings as shipped; with the commented options that precede any provider block
    added; then each commented provider block in place of the active provider lines (a block
    starts at a commented HTTPDNS_PROXY_PROVIDER line)."""
    yield "as shipped", dict(active)
    blocks, current, extra = [], None, {}
    for key, value in commented:
        if key == "HTTPDNS_PROXY_PROVIDER":
            current = {}
            blocks.append(current)
        (current if current is not None else extra)[key] = value
    # Commented lines before any provider block are options of the active provider.
    if extra:
        yield f"with its commented {', '.join(sorted(extra))}", {**active, **extra}
    provider_keys = re.compile(r"HTTPDNS_PROXY_(PROVIDER|ACCOUNT_ID|SECRET|ALIBABA_|AES_KEY|TENCENT_)")
    for block in blocks:
        env = {k: v for k, v in active.items() if not provider_keys.match(k)}
        env.update(block)
        yield f"with the commented provider {block['HTTPDNS_PROXY_PROVIDER']} block", env


def check_variants(name, active, commented):
    seen = 0
    for label, env in variants(active, commented):
        seen += 1
        error = start_error(env)
        if error:
            fail(f"{name} {label}: the proxy would refuse to start: {error}")
        else:
            ok(f"{name} {label}: provider {env.get('HTTPDNS_PROXY_PROVIDER', 'json')} passes the start-up checks")
    return seen


ASSIGN = re.compile(r"^(#\s*)?(HTTPDNS_PROXY_[A-Z0-9_]+)=(.*)$")
env_example = ROOT / "docker/httpdns.env.example"
active, commented = {}, []
for line in env_example.read_text().splitlines():
    match = ASSIGN.match(line.strip())
    if not match:
        continue
    (commented.append((match[2], match[3])) if match[1] else active.__setitem__(match[2], match[3]))
check_variants("docker/httpdns.env.example", active, commented)

secret_path = ROOT / "deploy/kubernetes/secret.example.yaml"
secret = yaml.safe_load(secret_path.read_text())
stringdata = {k: str(v) for k, v in (secret.get("stringData") or {}).items()}
commented = []
for line in secret_path.read_text().splitlines():
    match = re.match(r"^\s*#\s*(HTTPDNS_PROXY_[A-Z0-9_]+):\s*\"?([^\"#]*)\"?\s*$", line)
    if match:
        commented.append((match[1], match[2].strip()))
check_variants("deploy/kubernetes/secret.example.yaml", stringdata, commented)


# ---- 3. the manifests' use of the Secret and the sidecar's admin listener --------------------
def pod_specs(path):
    for doc in yaml.safe_load_all(path.read_text()):
        if doc and doc.get("kind") in ("Deployment", "DaemonSet"):
            yield doc["kind"], doc["spec"]["template"]["spec"]


for name in ("sidecar-deployment.yaml", "daemonset.yaml"):
    path = ROOT / "deploy/kubernetes" / name
    for kind, spec in pod_specs(path):
        for container in [*spec.get("initContainers", []), *spec.get("containers", [])]:
            for source in container.get("envFrom", []):
                ref = source.get("secretRef")
                if ref and ref.get("name") == "httpdns-proxy-credentials":
                    if ref.get("optional") is True:
                        ok(f"{name}: {kind} container {container['name']} loads the credentials Secret "
                           "with optional: true")
                    else:
                        fail(f"{name}: {kind} container {container['name']} needs the credentials Secret "
                             "(set optional: true: the default provider needs none)")
            env = {e["name"]: e.get("value") for e in container.get("env", [])}
            admin = env.get("HTTPDNS_PROXY_ADMIN_LISTEN")
            if name == "sidecar-deployment.yaml" and container["name"] == "httpdns-proxy":
                if admin and (admin.startswith("127.") or admin.startswith("[::1]")):
                    ok(f"{name}: the sidecar's admin listener is on loopback ({admin})")
                else:
                    fail(f"{name}: the sidecar's admin listener is {admin}: keep it on loopback "
                         "(exec probes reach it there)")
                for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                    command = (container.get(probe) or {}).get("exec", {}).get("command")
                    if command != ["httpdns-proxy", "healthcheck"]:
                        fail(f"{name}: the sidecar's {probe} is not `httpdns-proxy healthcheck` "
                             "(an httpGet probe cannot reach a loopback listener)")

# ---- 3b. the node tier's DoH token and its sidecars' resolver token are one Secret's key ------
def secret_refs(path, variable):
    refs = set()
    for _, spec in pod_specs(path):
        for container in [*spec.get("initContainers", []), *spec.get("containers", [])]:
            for entry in container.get("env", []):
                ref = (entry.get("valueFrom") or {}).get("secretKeyRef")
                if entry["name"] == variable and ref:
                    refs.add((ref.get("name"), ref.get("key"), ref.get("optional") is True))
    return refs


node_token = secret_refs(ROOT / "deploy/kubernetes/node-tier-daemonset.yaml", "HTTPDNS_PROXY_DOH_TOKEN")
pod_token = secret_refs(ROOT / "deploy/kubernetes/node-tier-pod.yaml", "HTTPDNS_PROXY_RESOLVER_TOKEN")
token_secret = yaml.safe_load((ROOT / "deploy/kubernetes/node-tier-token.example.yaml").read_text())
token_keys = set((token_secret.get("stringData") or {}).keys())
if len(node_token) == 1 and node_token == pod_token \
        and all(key in token_keys and optional for _, key, optional in node_token):
    ok("node-tier-daemonset.yaml's HTTPDNS_PROXY_DOH_TOKEN and node-tier-pod.yaml's HTTPDNS_PROXY_RESOLVER_TOKEN "
       f"read one Secret key, optionally: {node_token}")
else:
    fail(f"the node tier's HTTPDNS_PROXY_DOH_TOKEN {node_token} and the sidecar's HTTPDNS_PROXY_RESOLVER_TOKEN "
         f"{pod_token} must read the same key of node-tier-token.example.yaml's Secret ({sorted(token_keys)}) "
         "with optional: true")

# ---- 4. NO_PROXY on the sidecar example's app containers, as docs/deployment.md gives it ---------
REQUIRED_NO_PROXY = ["localhost", "127.0.0.1", "::1", ".svc", ".cluster.local", "169.254.169.254", "100.100.100.200"]
documented_no_proxy = re.findall(r"^NO_PROXY=(\S+)$", (ROOT / "docs/deployment.md").read_text(), re.M)
for _kind, spec in pod_specs(ROOT / "deploy/kubernetes/sidecar-deployment.yaml"):
    for container in spec.get("containers", []):
        env = {e["name"]: e.get("value") for e in container.get("env", [])}
        if "HTTP_PROXY" not in env and "http_proxy" not in env:
            continue
        upper, lower = env.get("NO_PROXY"), env.get("no_proxy")
        missing = [entry for entry in REQUIRED_NO_PROXY if entry not in (upper or "").split(",")]
        if upper is None or upper != lower:
            fail(f"sidecar-deployment.yaml: app container {container['name']} needs NO_PROXY and no_proxy, equal")
        elif missing:
            fail(f"sidecar-deployment.yaml: app container {container['name']}'s NO_PROXY lacks {', '.join(missing)}")
        elif documented_no_proxy != [upper]:
            fail(f"sidecar-deployment.yaml: app container {container['name']}'s NO_PROXY differs from "
                 f"docs/deployment.md's {documented_no_proxy}")
        else:
            ok(f"sidecar-deployment.yaml: app container {container['name']} has NO_PROXY/no_proxy as "
               "docs/deployment.md gives it")

# ---- 5. the node proxy fits a node; the scrape configuration points at the admin listener ------
daemonset_docs = [d for d in yaml.safe_load_all((ROOT / "deploy/kubernetes/daemonset.yaml").read_text()) if d]
daemonset = next(d for d in daemonset_docs if d["kind"] == "DaemonSet")
proxy = next(c for c in daemonset["spec"]["template"]["spec"]["containers"] if c["name"] == "httpdns-proxy")
admin_port = next(p["containerPort"] for p in proxy["ports"] if p["name"] == "admin")
admin_listen = {e["name"]: e.get("value") for e in proxy.get("env", [])}.get("HTTPDNS_PROXY_ADMIN_LISTEN", "")
if not admin_listen.endswith(f":{admin_port}"):
    fail(f"daemonset.yaml: HTTPDNS_PROXY_ADMIN_LISTEN {admin_listen} is not on the admin containerPort {admin_port}")
pod = daemonset["spec"]["template"]["spec"]
rolling = daemonset["spec"].get("updateStrategy", {}).get("rollingUpdate", {})
node_fit = {
    "priorityClassName system-node-critical": pod.get("priorityClassName") == "system-node-critical",
    "a toleration of every taint (operator Exists, no key)": {"operator": "Exists"} in pod.get("tolerations", []),
    "rolling update maxSurge 1, maxUnavailable 0": rolling.get("maxSurge") == 1 and rolling.get("maxUnavailable") == 0,
    "CPU and memory requests, a memory limit":
        {"cpu", "memory"} <= proxy.get("resources", {}).get("requests", {}).keys()
        and "memory" in proxy.get("resources", {}).get("limits", {}),
}
for what, present in node_fit.items():
    (ok if present else fail)(f"daemonset.yaml: {what}" + ("" if present else " is missing"))
annotations = daemonset["spec"]["template"]["metadata"].get("annotations", {})
if annotations.get("prometheus.io/scrape") == "true" and annotations.get("prometheus.io/port") == str(admin_port) \
        and annotations.get("prometheus.io/path") == "/metrics":
    ok(f"daemonset.yaml: prometheus.io/* annotations scrape /metrics on the admin port {admin_port}")
else:
    fail(f"daemonset.yaml: the prometheus.io/* annotations do not name /metrics on the admin port {admin_port}: "
         f"{annotations}")
monitor = yaml.safe_load((ROOT / "deploy/prometheus/servicemonitor.yaml").read_text())
wanted = monitor["spec"]["selector"]["matchLabels"]
namespaces = monitor["spec"].get("namespaceSelector", {}).get("matchNames", [monitor["metadata"]["namespace"]])
services = [d for d in daemonset_docs if d["kind"] == "Service" and d["metadata"]["namespace"] in namespaces
            and wanted.items() <= d["metadata"].get("labels", {}).items()]
if len(services) != 1:
    fail(f"servicemonitor.yaml selects {len(services)} Services of daemonset.yaml (want exactly the metrics one)")
else:
    service = services[0]
    port_names = {p["name"]: p for p in service["spec"]["ports"]}
    for endpoint in monitor["spec"]["endpoints"]:
        port = port_names.get(endpoint.get("port"))
        if port and port.get("targetPort") in ("admin", admin_port) and endpoint.get("path") == "/metrics":
            ok(f"servicemonitor.yaml scrapes /metrics through Service {service['metadata']['name']} "
               f"port {endpoint['port']} -> the admin listener")
        else:
            fail(f"servicemonitor.yaml endpoint {endpoint} does not reach /metrics on the admin port of Service "
                 f"{service['metadata']['name']}")
    if not service["spec"]["selector"].items() <= daemonset["spec"]["template"]["metadata"]["labels"].items():
        fail(f"Service {service['metadata']['name']} does not select the DaemonSet's pods")

# ---- 6. the NodeLocal cache listens where its rules put the address, and asks kube-dns ---------
for _kind, spec in pod_specs(ROOT / "deploy/kubernetes/nodelocal-daemonset.yaml"):
    if not spec.get("hostNetwork"):
        fail("nodelocal-daemonset.yaml: the DaemonSet must use hostNetwork (the address is on the node)")
    rules = " ".join(" ".join(c.get("args", [])) for c in spec.get("initContainers", []))
    found = re.search(r"nodelocal-rules --address (\S+) --port (\d+)", rules)
    env = {e["name"]: e.get("value") for c in spec["containers"] for e in c.get("env", [])}
    listen = env.get("HTTPDNS_PROXY_DNS_LISTEN")
    if found and listen == f"{found[1]}:{found[2]}":
        ok(f"nodelocal-daemonset.yaml: the DNS listener ({listen}) is where nodelocal-rules puts the address")
    else:
        fail(f"nodelocal-daemonset.yaml: nodelocal-rules makes {found and found.groups()}, the listener is {listen}")
    zones = env.get("HTTPDNS_PROXY_DNS_FORWARD_ZONE") or ""
    if "cluster.local=" in zones and found and found[1] not in zones:
        ok("nodelocal-daemonset.yaml: cluster.local goes to kube-dns by address, never to the listener's own")
    else:
        fail(f"nodelocal-daemonset.yaml: dns-forward-zone {zones!r} must send cluster.local to kube-dns's address")

print(f"deploy examples: {len(failures)} failed" if failures else "deploy examples: all checks passed")
sys.exit(1 if failures else 0)
