"""What /proc says about a process tree: CPU time, RSS, threads, descriptors."""
import os
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")


def process_tree(pid):
    """pid and all its descendants."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path("/proc/%s/stat" % entry).read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def status_field(pid, field):
    try:
        for line in Path("/proc/%d/status" % pid).read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_rss_kib(pid):
    return sum(status_field(p, "VmRSS") for p in process_tree(pid))


def rss_split_kib(pid):
    """RSS of the process tree split into anonymous and file-backed KiB (smaps_rollup)."""
    rss = anon = 0
    for p in process_tree(pid):
        try:
            for line in Path("/proc/%d/smaps_rollup" % p).read_text().splitlines():
                parts = line.split()
                if parts[0] == "Rss:":
                    rss += int(parts[1])
                elif parts[0] == "Anonymous:":
                    anon += int(parts[1])
        except (OSError, ValueError, IndexError):
            pass
    return {"rss": rss, "anon": anon, "file": rss - anon}


def tree_threads(pid):
    return sum(status_field(p, "Threads") for p in process_tree(pid))


def tree_cpu_split(pid):
    """(user, system) CPU seconds of a process and its descendants (clock ticks)."""
    user = system = 0
    for p in process_tree(pid):
        try:
            fields = Path("/proc/%d/stat" % p).read_text().rsplit(")", 1)[1].split()
            user += int(fields[11])
            system += int(fields[12])
        except (OSError, IndexError):
            pass
    return user / CLK_TCK, system / CLK_TCK


def tree_cpu_seconds(pid):
    return sum(tree_cpu_split(pid))


def tree_sched_ns(pid):
    """On-CPU nanoseconds of every thread of a process tree (schedstat's first field): finer
    than clock ticks. Threads that exit between two samples are not counted (event loops stay)."""
    total = 0
    for p in process_tree(pid):
        try:
            tids = os.listdir("/proc/%d/task" % p)
        except OSError:
            continue
        for tid in tids:
            try:
                total += int(Path("/proc/%d/task/%s/schedstat" % (p, tid)).read_text().split()[0])
            except (OSError, ValueError, IndexError):
                pass
    return total


def count_fds(pid):
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return None
