"""The processes of a run, as the supervisor keeps them in run.json's pids: what it started and
their descendants (Linux /proc), each known by its start time (a pid used again later is another
process)."""

import os
import signal
import time
from typing import Any

from fsdp_studio import run_manifest

#: How many looks (a second apart) a process that names no rank gets before it is taken for one
#: that is not a rank (the launcher itself, a helper).
UNRANKED_LOOKS = 3


class WorkerPids:
    """Keeps run.json's pids current with the command's descendants (Linux /proc), looked at every
    second; kill_left() ends those that outlived the command (workers in sessions of their own)."""

    def __init__(self, run_dir, pids):
        self.run_dir = run_dir
        self.own = list(pids)
        self.seen = {}  # pid: its start time (a pid used again later is another process)
        #: rank: the world size its environment names (None where it names none), of every rank
        #: that started (what the launcher told it: torchrun, deepspeed and mpirun each say so).
        self.ranks = {}
        #: pid: looks left — a process caught between fork and exec still has its parent's
        #: environment, so one that named no rank is looked at again a few times.
        self.unranked = {}
        self.next_look = 0.0
        for pid in self.own[1:]:
            self._note_rank(pid)

    def refresh(self, force=False, write=True):
        """Looks again (at most once a second unless forced); returns the pids when they changed
        (written to run.json unless write=False), else None."""
        now = time.monotonic()
        if now < self.next_look and not force:
            return None
        self.next_look = now + 1.0
        table = process_table()
        found = {pid: started for pid, started in descendants(self.own[1:], table).items() if pid not in self.seen}
        for pid in list(self.unranked):
            self._note_rank(pid)
        # Those gone (a short-lived helper, a rank that ended) are not named any more.
        gone = [pid for pid, started in self.seen.items() if table.get(pid, (None, None))[1] != started]
        for pid in gone:
            del self.seen[pid]
        if not (found or gone):
            return None
        self.seen.update(found)
        for pid in found:
            self._note_rank(pid)
        pids = self.own + list(self.seen)
        if write:
            run_manifest.update(self.run_dir, {"pids": pids})
        return pids

    def _note_rank(self, pid):
        told = rank_of(pid)
        if told is None:
            left = self.unranked.get(pid, UNRANKED_LOOKS)
            if left > 1:
                self.unranked[pid] = left - 1
            else:
                self.unranked.pop(pid, None)
            return
        self.unranked.pop(pid, None)
        rank, size = told
        if size is not None or rank not in self.ranks:
            self.ranks[rank] = size

    def world_seen(self):
        """What the ranks started so far say of the world: (size, told) — the largest WORLD_SIZE
        their launcher gave them (told=True, at least the ranks seen), else how many distinct ranks
        have started (told=False: a floor, other nodes' ranks are not seen here); None before any."""
        if not self.ranks:
            return None
        sizes = [s for s in self.ranks.values() if s is not None]
        if sizes:
            return max(max(sizes), len(self.ranks)), True
        return len(self.ranks), False

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


#: The variables a launcher tells each rank its rank and the world's size in: torch.distributed's
#: (torchrun, deepspeed, accelerate, this supervisor), Open MPI's, and MPICH / Intel MPI's (PMI).
RANK_VARIABLES = (
    (b"RANK", b"WORLD_SIZE"),
    (b"OMPI_COMM_WORLD_RANK", b"OMPI_COMM_WORLD_SIZE"),
    (b"PMI_RANK", b"PMI_SIZE"),
)


def rank_of(pid):
    """(rank, world size or None) a process was started with, from /proc/PID/environ (the
    environment at its exec); None when it names no rank, is gone, or is not ours to read."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            raw = f.read(1 << 20)  # an environment is far smaller; never read without bound
    except OSError:
        return None
    env = dict(item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    for rank_name, size_name in RANK_VARIABLES:
        rank = _count(env.get(rank_name))
        if rank is not None:
            size = _count(env.get(size_name))
            return rank, size if size else None
    return None


def _count(raw):
    """A non-negative decimal integer's value, else None."""
    return int(raw) if raw is not None and raw.isdigit() and len(raw) < 10 else None


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
