"""Heap allocation counting: bench/peers/malloc_count.c, preloaded, keeps its counters (malloc,
calloc, realloc, aligned) in a shared file page the harness reads before and after a load."""
import subprocess

from .proc import PEERS


def build_counter(workdir):
    """Builds bench/peers/malloc_count.c into WORKDIR once; returns the shared object."""
    lib = workdir / "malloc_count.so"
    if not lib.exists():
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(lib), str(PEERS / "malloc_count.c")], check=True)
    return lib


def preload_env(lib, counters):
    """The environment that preloads LIB with its counters in the file COUNTERS."""
    return {"LD_PRELOAD": str(lib), "MALLOC_COUNT_FILE": str(counters)}


def read_counters(path):
    """[malloc, calloc, realloc, aligned] counted so far."""
    raw = path.read_bytes()[:32]
    return [int.from_bytes(raw[i:i + 8], "little") for i in range(0, 32, 8)]
