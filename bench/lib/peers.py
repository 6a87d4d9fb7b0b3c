"""The peers' configurations: nginx as an origin and as a keep-alive proxy, the fake HTTPDNS
service. The reference proxies' configurations live with the comparison (bench/compare.py)."""
import os

from .proc import peer


def nginx_conf(d, servers, http_extra="", workers=1):
    """The load benchmarks' nginx in directory `d`: `workers` workers, keep-alive tuned for load,
    sendfile, temp paths and pid inside `d`, then `servers` (server blocks) inside `http`."""
    user = "user nobody nogroup;\n" if os.geteuid() == 0 else ""
    return (f"""{user}worker_processes {workers};
worker_rlimit_nofile 20000;
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 16384; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
{http_extra}    default_type application/octet-stream;
    client_body_temp_path {d}/tmp-body;
    proxy_temp_path {d}/tmp-proxy;
    fastcgi_temp_path {d}/tmp-fastcgi;
    uwsgi_temp_path {d}/tmp-uwsgi;
    scgi_temp_path {d}/tmp-scgi;
    open_file_cache max=16 inactive=600s;
    open_file_cache_valid 600s;
""" + servers + "}\n")


def nginx_conf_small(d, body, workers=1):
    """The one-connection benchmarks' nginx (bench pinned): no sendfile, no file cache."""
    user = "user nobody nogroup;\n" if os.geteuid() == 0 else ""
    return f"""{user}worker_processes {workers};
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    client_body_temp_path {d}/tmp-body;
    proxy_temp_path {d}/tmp-proxy;
    fastcgi_temp_path {d}/tmp-fastcgi;
    uwsgi_temp_path {d}/tmp-uwsgi;
    scgi_temp_path {d}/tmp-scgi;
{body}}}
"""


def nginx_argv(d):
    return ["nginx", "-p", str(d), "-e", str(d / "error.log"), "-c", str(d / "nginx.conf")]


def fake_httpdns_argv(port, ttl=3600, names=()):
    """bench/peers/fake_httpdns.py: DoH JSON on 127.0.0.1:PORT; origin.test -> 127.0.0.1 and
    every NAME=IP of `names`."""
    argv = peer("fake_httpdns", "--port", port, "--ttl", ttl)
    for item in names:
        argv += ["--name", item]
    return argv


def httpdns_proxy_json_args(service_port):
    """The flags that make httpdns-proxy resolve through the fake HTTPDNS service only."""
    return ["--provider", "json", "--resolver-url", "http://localhost:%d/resolve" % service_port,
            "--resolver-ip", "127.0.0.1", "--system-fallback", "false"]
