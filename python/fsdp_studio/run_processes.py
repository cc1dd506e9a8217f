"""The processes of a run, as the supervisor keeps them in run.json's pids: what it started and
their descendants (Linux /proc), each known by its start time (a pid used again later is another
process)."""

import os
import signal
import time
from typing import Any

from fsdp_studio import run_manifest


class WorkerPids:
    """Keeps run.json's pids current with the command's descendants (Linux /proc), looked at every
    second; kill_left() ends those that outlived the command (workers in sessions of their own)."""

    def __init__(self, run_dir, pids):
        self.run_dir = run_dir
        self.own = list(pids)
        self.seen = {}  # pid: its start time (a pid used again later is another process)
        self.next_look = 0.0

    def refresh(self, force=False, write=True):
        """Looks again (at most once a second unless forced); returns the pids when they changed
        (written to run.json unless write=False), else None."""
        now = time.monotonic()
        if now < self.next_look and not force:
            return None
        self.next_look = now + 1.0
        table = process_table()
        found = {pid: started for pid, started in descendants(self.own[1:], table).items() if pid not in self.seen}
        # Those gone (a short-lived helper, a rank that ended) are not named any more.
        gone = [pid for pid, started in self.seen.items() if table.get(pid, (None, None))[1] != started]
        for pid in gone:
            del self.seen[pid]
        if not (found or gone):
            return None
        self.seen.update(found)
        pids = self.own + list(self.seen)
        if write:
            run_manifest.update(self.run_dir, {"pids": pids})
        return pids

    def any_alive(self):
        """Whether a descendant seen so far still runs."""
        alive = process_table()
        return any(pid in alive and alive[pid][1] == started for pid, started in self.seen.items())

    def kill_left(self):
        alive = process_table()
        for pid, started in self.seen.items():
            if pid in alive and alive[pid][1] == started:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass


def stat_of(pid):
    """(parent pid, start time in clock ticks since boot) of a process ("self": this one), from
    /proc/PID/stat; None when it is gone or there is no /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            line = f.read().decode("ascii", "replace")
        # The command name (field 2) is in parentheses and may hold spaces: the fields after the last ")".
        fields = line[line.rindex(")") + 2 :].split()
        return int(fields[1]), int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def process_table():
    """{pid: (parent pid, start time)} of every process, from /proc; empty where there is no /proc."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return {}
    table = {}
    for name in names:
        if name.isdigit():
            stat = stat_of(name)
            if stat is not None:
                table[int(name)] = stat
    return table


def descendants(roots, table=None):
    """{pid: start time} of every process below `roots`."""
    table = process_table() if table is None else table
    out: dict[int, Any] = {}
    frontier = set(roots)
    while frontier:
        below = [pid for pid, (ppid, _) in table.items() if ppid in frontier and pid not in out]
        out.update((pid, table[pid][1]) for pid in below)
        frontier = set(below)
    return out
