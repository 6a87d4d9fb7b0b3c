"""Processes, ports and the life of one benchmark run.

Every process a benchmark starts runs in its own session (process group), is listed in the run's
pid file and is stopped when the run ends, whatever the reason: a failure, Ctrl-C, SIGTERM or
the run's time limit (--max-seconds, an alarm that raises Fail in the main thread).
"""
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parents[1]
REPO = BENCH_DIR.parent
PEERS = BENCH_DIR / "peers"


class Fail(Exception):
    """A clear, expected failure: printed without a traceback."""


def log(msg):
    sys.stderr.write("[bench %s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


def clean_env(extra=None):
    """The caller's environment without proxy variables and without HTTPDNS_PROXY_* (every proxy
    gets only the flags a benchmark gives it), without trust-store variables (SSL_CERT_FILE and
    the like: a container sets none, and they change what a process loads at start), with the
    repository on PYTHONPATH so that `python3 -m bench.peers.NAME` finds the peers."""
    env = {k: v for k, v in os.environ.items()
           if k.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")
           and not k.startswith("HTTPDNS_PROXY_")
           and k not in ("SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE", "NIX_SSL_CERT_FILE")}
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra or {})
    return env


def peer(module, *args):
    """argv of a Python peer in bench/peers (fake HTTPDNS service, tunnel holders, relays)."""
    return [sys.executable, "-m", "bench.peers." + module, *[str(a) for a in args]]


def tail(path, lines=15):
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def run(argv, timeout, env=None, check=True, input=None):
    """Runs a command to completion (bounded); raises Fail on a time-out or, with check, on a
    non-zero status."""
    try:
        res = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout,
                             env=clean_env(env), input=input)
    except subprocess.TimeoutExpired as e:
        raise Fail("%s did not finish within %d s" % (argv[0], timeout)) from e
    if check and res.returncode != 0:
        raise Fail("%s failed (status %d): %s" % (" ".join(map(str, argv)), res.returncode,
                                                  (res.stderr or res.stdout)[-800:]))
    return res


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, alive=lambda: None, deadline=30.0, what=None):
    """Waits until something accepts on 127.0.0.1:PORT; `alive` raises Fail when the server it
    waits for has died."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        alive()
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise Fail("%s did not listen on 127.0.0.1:%d within %.0f s" % (what or "a server", port, deadline))


class Processes:
    """Every started process: its own session and process group, its pid in WORKDIR/pids."""

    def __init__(self, workdir):
        self.pidfile = Path(workdir) / "pids"
        self.procs = {}  # name -> (Popen, log path)

    def _write(self):
        tmp = self.pidfile.with_suffix(".tmp")
        tmp.write_text("".join("%d\n" % p.pid for p, _ in self.procs.values()))
        os.replace(tmp, self.pidfile)

    def start(self, name, argv, logpath, stdout=None, stdin=subprocess.DEVNULL, env=None, raw_env=False):
        if name in self.procs:
            raise Fail("internal: %s already running" % name)
        out = open(logpath, "ab")
        try:
            proc = subprocess.Popen([str(a) for a in argv], stdout=stdout if stdout is not None else out,
                                    stderr=out, stdin=stdin, start_new_session=True,
                                    env=env if raw_env else clean_env(env))
        finally:
            out.close()
        self.adopt(name, proc, logpath)
        return proc

    def adopt(self, name, proc, logpath):
        """Takes a process started elsewhere (in its own session) into the list."""
        self.procs[name] = (proc, Path(logpath))
        self._write()

    def stop(self, name, grace=5.0):
        entry = self.procs.pop(name, None)
        if entry is None:
            return
        proc, _ = entry
        self._signal(proc, signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            self._signal(proc, signal.SIGKILL)
            proc.wait(5)
        self._signal(proc, signal.SIGKILL)  # children left in the group (nginx workers, helpers)
        self._write()

    @staticmethod
    def _signal(proc, sig):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def stop_all(self):
        for name in reversed(list(self.procs)):
            self.stop(name)

    def running(self, name):
        return name in self.procs

    def check_alive(self, name):
        proc, logpath = self.procs[name]
        if proc.poll() is not None:
            raise Fail("%s exited with status %s; last log lines:\n%s" % (name, proc.returncode, tail(logpath)))

    def pid(self, name):
        return self.procs[name][0].pid

    def wait_port(self, name, port, deadline=30.0):
        try:
            wait_port(port, lambda: self.check_alive(name), deadline, name)
        except Fail as e:
            raise Fail("%s; last log lines:\n%s" % (e, tail(self.procs[name][1]))) from None


class LockedProcesses(Processes):
    """Processes, safe to use from a helper thread and the main thread at once."""

    def __init__(self, workdir):
        super().__init__(workdir)
        self.lock = threading.RLock()

    def start(self, *a, **kw):
        with self.lock:
            return super().start(*a, **kw)

    def stop(self, *a, **kw):
        with self.lock:
            return super().stop(*a, **kw)

    def _write(self):
        with self.lock:
            return super()._write()


@contextlib.contextmanager
def session(max_seconds, prefix="httpdns-bench-"):
    """One run: a temporary work directory (removed at the end), SIGTERM and SIGINT turned into
    Fail, and a hard time limit. Yields the work directory."""
    workdir = Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(workdir, 0o755)  # servers that drop privileges read their configuration there

    def on_signal(signum, _frame):
        raise Fail("interrupted by signal %d" % signum)

    def on_alarm(_signum, _frame):
        raise Fail("the run took longer than --max-seconds (%d s)" % max_seconds)
    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    old[signal.SIGALRM] = signal.signal(signal.SIGALRM, on_alarm)
    if max_seconds:
        signal.alarm(int(max_seconds))
    try:
        yield workdir
    finally:
        signal.alarm(0)
        for s, h in old.items():
            signal.signal(s, h)
        shutil.rmtree(workdir, ignore_errors=True)
