"""Tools a benchmark needs, the open-file limit, and the binaries it measures."""
import os
import platform
import resource
import shutil
import subprocess
import sys
from pathlib import Path

from .proc import REPO, Fail, log

# Debian packages of commands whose package name differs from the command.
PACKAGES = {"taskset": "util-linux", "dnsperf": "dnsperf", "unbound": "unbound", "dnsmasq": "dnsmasq-base",
            "strace": "strace", "gcc": "gcc", "ip": "iproute2", "ss": "iproute2", "setpriv": "util-linux",
            "danted": "dante-server"}
SBIN = ("/usr/sbin", "/sbin")


def which(cmd):
    found = shutil.which(cmd)
    if found:
        return found
    for d in SBIN:
        if os.access(os.path.join(d, cmd), os.X_OK):
            return os.path.join(d, cmd)
    return None


def require_tools(commands, services=()):
    """Makes sure every command is on PATH: as root, installs the missing Debian packages with
    apt-get (and stops the packaged daemons in `services`, which must not keep running on their
    default ports); otherwise fails with the command to run."""
    if platform.system() != "Linux":
        raise Fail("Linux only (the benchmarks read /proc)")
    missing = sorted({PACKAGES.get(c, c) for c in commands if not which(c)})
    if not missing:
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise Fail("missing tools; install them with: apt-get install -y %s" % " ".join(missing))
    log("installing %s (apt-get)" % " ".join(missing))
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = ["apt-get", "install", "-y", "--no-install-recommends", *missing]
    if subprocess.run(install, env=env, stdout=sys.stderr).returncode != 0:
        subprocess.run(["apt-get", "update"], env=env, stdout=sys.stderr)
        if subprocess.run(install, env=env, stdout=sys.stderr).returncode != 0:
            raise Fail("could not install %s" % " ".join(missing))
    for svc in services:
        for argv in (["systemctl", "stop", svc], ["service", svc, "stop"]):
            if shutil.which(argv[0]):
                subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    still = [c for c in commands if not which(c)]
    if still:
        raise Fail("still missing after the install: %s" % " ".join(still))


def raise_nofile(need=0):
    """Raises the open-file limit to the hard limit (children inherit it); returns it."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        hard = 65536
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if need and hard < need:
        raise Fail("the open-file hard limit is %d; this run needs %d" % (hard, need))
    return hard


# ---------------------------------------------------------------- the binaries measured
SCRATCH = REPO / ".build-bench"
SNAPSHOT = SCRATCH / "src"


def add_binary_arguments(parser, what="httpdns-proxy"):
    g = parser.add_argument_group("the binary measured (default: a release build of the working tree)")
    g.add_argument("--proxy-bin", metavar="PATH", help="use this %s binary instead of building one" % what)
    g.add_argument("--rev", metavar="REV", help="build a clean snapshot of git revision REV (git archive into "
                   ".build-bench/src) instead of the working tree, e.g. --rev HEAD")
    g.add_argument("--no-build", action="store_true", help="use the binary of a previous build in .build-bench")


def _build_args(args, product):
    argv = ["swift", "build", "-c", "release", "--product", product, "--scratch-path", str(SCRATCH)]
    if getattr(args, "rev", None):
        argv += ["--package-path", str(SNAPSHOT)]
    return argv


def _snapshot(rev):
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", "-q", rev + "^{commit}"],
                            capture_output=True, text=True).stdout.strip()
    if not commit:
        raise Fail("unknown git revision: %s" % rev)
    stamp = SNAPSHOT / ".bench-rev"
    if stamp.is_file() and stamp.read_text().strip() == commit:
        return commit  # kept: builds incrementally
    shutil.rmtree(SNAPSHOT, ignore_errors=True)
    SNAPSHOT.mkdir(parents=True)
    archive = subprocess.Popen(["git", "-C", str(REPO), "archive", commit], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(SNAPSHOT)], stdin=archive.stdout, check=True)
    archive.wait()
    if (REPO / "Package.resolved").is_file() and not (SNAPSHOT / "Package.resolved").exists():
        shutil.copy(REPO / "Package.resolved", SNAPSHOT)
    stamp.write_text(commit + "\n")
    return commit


def build_product(args, product):
    """A release build of `product` (httpdns-proxy, resolver-bench, nio-floor) of the working
    tree or of --rev, in .build-bench; returns the binary's path."""
    if not shutil.which("swift"):
        raise Fail("swift not found (or pass the binary's path)")
    if getattr(args, "rev", None) and not args.no_build:
        _snapshot(args.rev)
    argv = _build_args(args, product)
    if not args.no_build:
        log("building %s (release, .build-bench)" % product)
        if subprocess.run(argv, stdout=sys.stderr).returncode != 0:
            raise Fail("release build of %s failed" % product)
    bin_dir = subprocess.run(argv + ["--show-bin-path"], capture_output=True, text=True).stdout.strip()
    path = Path(bin_dir) / product
    if not os.access(path, os.X_OK):
        raise Fail("no %s at %s (drop --no-build)" % (product, path))
    return str(path)


def proxy_binary(args):
    """The httpdns-proxy binary to measure, and the revision it was built from (or None)."""
    if args.proxy_bin:
        if not os.access(args.proxy_bin, os.X_OK):
            raise Fail("not an executable: %s" % args.proxy_bin)
        return os.path.abspath(args.proxy_bin), revision_of(args.proxy_bin)
    path = build_product(args, "httpdns-proxy")
    if args.rev:
        return path, (SNAPSHOT / ".bench-rev").read_text().strip()[:12]
    return path, working_tree_revision()


def revision_of(binary):
    """The git revision a binary was built from, when the build says so: a --rev snapshot's
    stamp, else the working tree's revision for binaries built in this checkout."""
    p = Path(binary).resolve()
    for parent in p.parents:
        for stamp in (".bench-rev", ".ab-rev"):
            if (parent / stamp).is_file():
                return (parent / stamp).read_text().strip()[:12]
        if (parent / "Package.swift").is_file():
            break
    if REPO in p.parents:
        return working_tree_revision()
    return None


def working_tree_revision():
    """HEAD, with -dirty when what the binary is built from (Sources/, Package.swift) differs."""
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    if not head:
        return None
    changed = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "Sources", "Package.swift"],
                             capture_output=True, text=True).stdout.strip()
    return head + ("-dirty" if changed else "")
