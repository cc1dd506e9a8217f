"""The processes of one attempt at a run on this host, and the order to kill them in. Each carries
its attempt's id and its owner's run folder in its environment (supervise.py child_env) — the
ranks too, where they are not below their launcher (a SLURM step's tasks are slurmstepd's children,
not srun's) — so they are found by it, wherever they sit in the process tree.

Linux /proc; elsewhere none is found. Any Python >= 3.9, standard library only."""

import os
from typing import NamedTuple, Optional

from fsdp_studio._events import RUN_ATTEMPT_ENV
from fsdp_studio.event_merge import OWNER_MERGES_ENV
from fsdp_studio.frozen import kill_tree
from fsdp_studio.run_processes import process_table

#: What names the process a rank watches as its launcher (native/src/cli/main.cc launcher_pid).
LAUNCHER_PID_ENV = b"FSDP_LAUNCHER_PID="
#: What names a process's rank, as its launcher sets it (srun's PMIx, mpirun, torchrun).
RANK_ENVS = (b"PMIX_RANK=", b"OMPI_COMM_WORLD_RANK=", b"PMI_RANK=", b"RANK=")


class Found(NamedTuple):
    """What a process's environment says of it: the launcher it watches and its rank, where named."""

    launcher: Optional[int]
    rank: Optional[int]


def kill_attempt(run_dir, attempt_id, roots=(), spare=(), found=None):
    """SIGKILL to every process of the attempt on this host and to `roots` and all below them, but
    `spare`: the attempt's ranks first and the launchers they watch last, then what is left below
    `roots`. Rank 0 watches its launcher and ends the job when it is gone: killed after it, rank 0
    would write an end of its own ("the job's launcher is gone") in place of the one whoever kills
    them writes. `found`: the attempt's processes as processes_of gave them, where the caller has
    looked already (each look reads every process's environment). Returns the pids killed."""
    found = processes_of(run_dir, attempt_id) if found is None else found
    found = {pid: seen for pid, seen in found.items() if pid not in spare}
    killed = kill_tree(ranks_first(found), spare)
    return killed + [pid for pid in kill_tree(roots, spare) if pid not in killed]


def ranks_first(found, table=None):
    """The order to kill the attempt's processes ({pid: Found}) in: the launchers some process names
    last; of the rest, the deeper below another of them first (mpirun's ranks before mpirun); and
    rank 0 before the other ranks, as it watches them too. Depth counts only ancestors among
    `found`: the launchers of a killed owner are orphans, so their depth in the whole tree says
    nothing (and a SLURM step's ranks are not even below srun). `table`: {pid: (parent pid, start
    time)}, /proc's by default."""
    launchers = {seen.launcher for seen in found.values() if seen.launcher is not None}
    table = process_table() if table is None else table

    def depth(pid):
        seen, count = set(), 0
        while pid in table and pid not in seen:
            seen.add(pid)
            pid = table[pid][0]
            count += pid in found
        return count

    def rank(pid):
        named = found[pid].rank
        return named if named is not None else 1 << 30

    return sorted(found, key=lambda pid: (pid in launchers, -depth(pid), rank(pid), pid))


def processes_of(run_dir, attempt_id):
    """{pid: Found} of the processes, but this one, whose environment names this attempt of this run
    folder."""
    if not attempt_id:
        return {}
    want = (f"{RUN_ATTEMPT_ENV}={attempt_id}".encode(), f"{OWNER_MERGES_ENV}=".encode())
    found = {}
    for name in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read(1 << 20).split(b"\0")
        except OSError:
            continue  # gone, or not ours to read (then not ours to kill either)
        owner = next((item[len(want[1]) :] for item in env if item.startswith(want[1])), None)
        if want[0] in env and owner is not None and same_folder(owner.decode("utf-8", "replace"), run_dir):
            found[int(name)] = Found(number_named(env, (LAUNCHER_PID_ENV,)), number_named(env, RANK_ENVS))
    return found


def number_named(env, keys):
    """The whole number the first of `keys` (b"NAME=") names in an environment (its items, as
    bytes), or None."""
    for key in keys:
        item = next((item for item in env if item.startswith(key)), None)
        if item is not None:
            value = item[len(key) :]
            return int(value) if value.isdigit() else None
    return None


def same_folder(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
