"""Owns one run for FSDP Studio, whatever runs in it: a person's training command, or the native
runtime (--native). The one process that writes the run's run.json (through run_manifest.py).

    python3 .../fsdp_studio/supervise.py --run-dir DIR [--native] [--manifest JSON]
                                         [--nproc N] [--use-this-python] -- COMMAND...

It writes DIR/run.json first (status "starting"): the manifest the launcher composed (--manifest,
or $FSDP_RUN_MANIFEST), with this process as the run's first pid, this attempt (an id, and where
its events begin in metrics.jsonl: readers tell whose an end is by it) and, when it leads the run's
process group, that group. Without one it keeps the run.json already there (a SLURM job's, written
when the job was queued).

A person's command: it marks the run running, writes run_start to DIR/metrics.jsonl, starts
COMMAND (or N copies of it with the environment rendezvous torch.distributed's env:// reads: RANK,
LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) in the same process group, with
this package on PYTHONPATH and FSDP_STUDIO_RUN_DIR set, and when it ends writes run_end and the
final status to run.json: completed, stopped (a stop signal came), or failed (with which rank ended
how, and the last line it printed to stderr; each rank's stderr lines are marked with its rank).
One rank failing stops the others, as torchrun does. A failure on a missing module (No module named
'torch') names the Python that ran the command, its path and version. With --use-this-python (the
launch spec's python:, or the Python extension's selection) the Python running this supervisor
also runs a bare python/python3 first word of the command, and its folder comes first on the
command's PATH.

The native runtime (--native): COMMAND is fsdp-train, fsdp-train-native, or mpirun/srun around it.
A folder whose run.lock another trainer holds is refused before anything is written. The runtime
writes its own events (run_start, steps, run_end) and holds the lock; this process merges them
into the stream and turns what the stream took into run.json — running, the step at most once a
second, the end: run.json says nothing the stream has not said first (runtime_run.RuntimeRun).

This process alone writes metrics.jsonl (event_merge.py): the runtime's rank 0 and the companion in
a person's command append to files of their own, events/<attempt>/, which it merges into it as it
polls, with its own events in the same sequence; one end per attempt, the first. A runtime that ended without its
run_end leaves the run failed with how its process ended and the last line it printed, except when
it never started the run (no run_start) in a folder that had one: then run.json is put back as it
was, so that run keeps the end it had (a refused --resume).

This process owns the run (native/FORMATS.md, "The run folder and its owner"): nothing of the run
outlives it. A guard process ends every process of the run (the group this process leads; in a
SLURM batch shell's group, this process and everything below it) and writes the run's end, failed
with the reason, if this process is killed, stays stopped (SIGSTOP) for FSDP_STUDIO_FROZEN_AFTER_S
seconds (default 60; start_guard, frozen.py), or runs without polling (blocked) for
FSDP_STUDIO_HUNG_AFTER_S (default 60: it beats to the guard as it polls, heartbeat.py); in a batch
shell's group its children also die with it (PR_SET_PDEATHSIG). A launcher or rank of the run stopped that long is
killed with every other process of the run by this process, and the run's end names it. Any
Python >= 3.9, standard library only.

Stop signals go to the whole process group (the editor's Stop, a terminal's Ctrl-C): every rank,
torchrun, accelerate and deepspeed get them directly, so this process does not forward them; it
only notes that the run was stopped and waits for the command to end. Launchers that start their
workers in sessions of their own (torchrun and accelerate do) pass the signal on themselves; the
workers' pids are added to run.json's pids as they appear, so that a Stop that has to kill the
group kills them too, and any still alive when the command has ended are killed then.

In a SLURM job's batch step (the run.json it keeps names the job) this process also records the
job's end when SLURM ends it — cancelled, timed out, preempted — from the SIGTERM SLURM sends before
it kills the job (slurm_job_end.py), so that no editor watching the job has to write it; and a job
requeued under the same id clears that record as it starts again.
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any, Optional

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if PACKAGE_ROOT not in sys.path:
    sys.path.insert(0, PACKAGE_ROOT)

from fsdp_studio import run_manifest  # noqa: E402
from fsdp_studio._events import RUN_ATTEMPT_ENV, RUN_DIR_ENV, EventLog  # noqa: E402
from fsdp_studio.attempt_processes import kill_attempt  # noqa: E402
from fsdp_studio.dead_attempt import take_up as take_up_dead_attempt  # noqa: E402
from fsdp_studio.event_merge import OWNER_MERGES_ENV, EventMerge  # noqa: E402
from fsdp_studio.frozen import (  # noqa: E402
    FrozenWatch,
    end_in_log,
    group_of,
    program_of,
    wait_gone,
)
from fsdp_studio.heartbeat import Heartbeat, hung_reason, say, wait_for_owner  # noqa: E402
from fsdp_studio.run_folder_file import RefusedFile, check_regular, read_tail  # noqa: E402
from fsdp_studio.run_folder_watch import file_size, take_lock  # noqa: E402
from fsdp_studio.run_processes import WorkerPids  # noqa: E402
from fsdp_studio.run_start import leads_run_group, new_attempt, starting_manifest, write_starting  # noqa: E402
from fsdp_studio.runtime_run import (  # noqa: E402
    RUNTIME_END_GRACE_S,
    ParentWatch,
    RuntimeRun,
    launcher_trampoline,
    run_end_in,
    runtime_reason,
    stderr_run_end,
)
from fsdp_studio.slurm_job_end import SlurmJobEnd  # noqa: E402

#: Names this process to the trainer as the holder of the run folder's lock (run_folder_lock.h).
RUN_LOCK_OWNER_ENV = "FSDP_RUN_LOCK_OWNER"

#: A rank that failed gets the others this long to end after SIGTERM, then SIGKILL.
PEERS_GRACE_S = 10.0

#: The most a new attempt waits for the run folder's lock while the last attempt's run.json says it
#: ended: that owner wrote its end and lets the lock go only as it exits, a moment later, so a Resume
#: or Continue pressed at the end is not refused. An owner that never exits is refused after it.
ENDED_OWNER_EXIT_WAIT_S = 30.0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [GUARD_FLAG]:
        return guard_main(argv[1], int(argv[2]), argv[3], argv[4] if len(argv) > 4 else GROUP)
    args = parse_args(argv)
    attempt = start(args)
    if isinstance(attempt, int):
        return attempt  # refused, or the command could not be started: its exit code
    codes, failed = wait(attempt)
    return end(attempt, codes, failed)


class Attempt:
    """One attempt at the run, as start() leaves it for wait() and end(): the command's processes,
    copying their stderr from here on, and what the run's end is written from."""

    def __init__(self, args, run_dir, log, guard, env, stopped, children, slurm_end):
        self.args = args
        self.run_dir = run_dir
        #: The run's stream as this owner writes it: the writers' files merged, and its own events.
        self.log: EventMerge = log
        self.guard = guard
        #: The command's environment (a missing module's hint looks the command up on its PATH).
        self.env = env
        #: The stop signals that came (the handlers start() installs append them).
        self.stopped = stopped
        self.children = children
        #: Each rank's last line on stderr: the words a failure is reported with.
        self.last_words = [None] * len(children)
        self.copiers = [
            threading.Thread(
                target=copy_stderr,
                args=(c.stderr, f"[rank {r}] " if len(children) > 1 else "", self.last_words, r),
                daemon=True,
            )
            for r, c in enumerate(children)
        ]
        for copier in self.copiers:
            copier.start()
        self.workers = WorkerPids(run_dir, [os.getpid(), *(c.pid for c in children)])
        self.parent = ParentWatch(children) if args.with_parent else None
        #: A native run's runtime, its events turned into run.json (None for a person's command).
        self.runtime: Optional[RuntimeRun] = None
        #: run.json's bytes before this attempt wrote its starting manifest (None when it wrote none):
        #: put back when the runtime never started the run.
        self.manifest_before: Optional[bytes] = None
        #: What runs between looks at the processes while waiting.
        self.on_poll = self.workers.refresh
        #: A SLURM job's end, recorded here when SLURM ends the job (slurm_job_end.py).
        self.slurm_end = slurm_end
        #: A process of the attempt stopped (SIGSTOP) for FSDP_STUDIO_FROZEN_AFTER_S (frozen.py), and
        #: the run's end that names it once every process of the attempt was killed for it.
        self.frozen = FrozenWatch()
        self.frozen_reason: Optional[str] = None
        #: This process's beat to its guard as it polls: a supervisor that stops polling is hung (heartbeat.py).
        self.heartbeat = Heartbeat(guard[0] if guard else None)
        #: How many of the stop signals that came the stream has been told of.
        self.stops_told = 0

    def poll(self):
        self.heartbeat.beat()
        self.tell_stops()
        self.log.merge()
        self.on_poll()
        self.slurm_end.look()
        self.look_frozen()

    def tell_stops(self):
        """Each stop signal that came, in the stream as this owner noted it (the handler only notes
        it), before the lines the writers wrote since the last look: a second one while the run is
        stopping is the same stop, "already stopping". One that came once the stream held the
        attempt's end is no request to an attempt that still runs: not told."""
        while self.stops_told < len(self.stopped):
            if self.log.ended:
                self.stops_told = len(self.stopped)
                return
            event: dict[str, Any] = {
                "type": "stop_requested",
                "signal": signal.Signals(self.stopped[self.stops_told]).name,
            }
            if self.stops_told > 0:
                event["already_stopping"] = True
            self.log.write(event, merge_first=False)
            self.stops_told += 1

    def processes(self, others):
        """The attempt's processes as an event of the stream: this owner, its guard, then `others`
        (each a dict with pid, role and what else is known)."""
        host = socket.gethostname()
        own = [{"pid": os.getpid(), "role": "owner", "name": "supervise.py", "host": host}]
        if self.guard is not None:
            own.append({"pid": self.guard[1].pid, "role": "guard", "name": "supervise.py", "host": host})
        return {"type": "processes", "processes": own + others}

    def look_frozen(self):
        """A stopped launcher (mpirun, fsdp-train) or rank answers nothing and stalls the run: once one
        has been stopped for the stated time, every process of the attempt is killed and the run's end
        names it (a runtime's own end, written before, stands)."""
        if self.frozen_reason is not None:
            return
        roots = [c.pid for c in self.children]
        pid = self.frozen.look(roots + [p for p in self.workers.seen if p not in roots])
        if pid is None:
            return
        self.frozen_reason = self.frozen.reason(pid)
        print(f"fsdp_studio.supervise: {self.frozen_reason}", file=sys.stderr, flush=True)
        kill_attempt(self.run_dir, self.log.attempt, roots, spare=(os.getpid(),))


def start(args):
    """Starting: the run folder taken (or refused), run.json's starting manifest, the guard, the stop
    signals noted, and the command's processes. Returns the Attempt, or the exit code when nothing
    was started."""
    run_dir = os.path.abspath(args.run_dir)
    os.makedirs(run_dir, exist_ok=True)
    starting = starting_manifest(args)
    if starting is False:
        return 2
    opened = open_run_folder(run_dir, args.native)
    if isinstance(opened, int):
        return opened
    lock, folder_log = opened
    if lock is not None:
        # The lock was free: the last attempt's owner and guard are gone. One killed with its guard
        # left that attempt unmerged and without an end: taken up before this attempt writes a line.
        take_up_dead_attempt(run_dir)
    before = run_manifest.read_bytes(run_dir)
    log_from = file_size(folder_log.path)
    attempt_fields = new_attempt(log_from)
    # This attempt's run_start and run_end carry its id, whoever writes them: this process, its
    # guard, the runtime (RUN_ATTEMPT_ENV in child_env) — readers tell whose an event is by it.
    # This process alone writes metrics.jsonl: the others' events reach it through files it merges.
    log = EventMerge(run_dir, attempt_fields["id"])
    if starting is not None:
        write_starting(run_dir, starting, attempt_fields)
    manifest = run_manifest.read(run_dir)
    guard = start_guard(run_dir, lock, log.attempt)
    stopped: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: stopped.append(signum))
    slurm_end = SlurmJobEnd(run_dir, manifest, stopped)
    slurm_end.started()
    if starting is None:
        # The run.json kept (a SLURM job's, written when it was queued) becomes this attempt's.
        run_manifest.update(run_dir, {"attempt": attempt_fields})

    world = 1 if args.native else args.nproc
    env = child_env(run_dir, own_python=args.use_this_python)
    env[RUN_ATTEMPT_ENV] = log.attempt
    env[OWNER_MERGES_ENV] = run_dir
    if lock is not None:
        env[RUN_LOCK_OWNER_ENV] = str(os.getpid())
    if args.use_this_python:
        args.command = with_this_python(args.command)
    started = launcher_trampoline(args.command) if args.native else args.command
    try:
        children = [
            # A guard of the group ends them (the ranks before their launcher, so that the run has
            # one end: its); in a group that is not the run's (a SLURM batch step) each dies with this process.
            subprocess.Popen(
                started,
                env=e,
                stderr=subprocess.PIPE,
                preexec_fn=None if guard and leads_run_group() else die_with_parent,
            )
            for e in rank_envs(env, world, args.master_port)
        ]
    except OSError as e:
        return not_started(args, run_dir, log, guard, e)
    attempt = Attempt(args, run_dir, log, guard, env, stopped, children, slurm_end)
    if args.native:
        follow_runtime(attempt, before if starting is not None else None)
    else:
        announce_command(attempt, manifest, world)
        follow_command_world(attempt, manifest, world)
    return attempt


def open_run_folder(run_dir, native):
    """The run folder's lock (a native run's; None for a person's command) and its event log, or the
    exit code when the folder is refused."""
    try:
        # A run.lock or metrics.jsonl that is not the folder's own regular file (a link out of it, a
        # FIFO) is refused by name before anything is written (run_folder_file.py).
        # The folder's lock is this owner's for the whole attempt, taken before anything is started
        # and let go when this process ends, after every process of the attempt (run_folder_lock.h).
        lock, holder = take_lock_after_the_last_end(run_dir) if native else (None, None)
        log = EventLog(run_dir)
        check_regular(log.path)
    except RefusedFile as e:
        print(f"fsdp_studio.supervise: {e}", file=sys.stderr)
        return 1
    if holder:
        # One trainer per run folder: a folder in use is refused before anything of it is touched.
        print(
            f"fsdp_studio.supervise: {run_dir} is in use by another trainer: {holder} holds"
            f" {os.path.join(run_dir, 'run.lock')}. Two trainers on one run folder destroy each other's"
            " checkpoints: wait for it to end, stop it, or use another run folder",
            file=sys.stderr,
        )
        return 1
    return lock, log


def take_lock_after_the_last_end(run_dir):
    """take_lock(), waiting for the lock while its holder is an owner whose attempt has ended
    (run.json no longer live): the condition it waits on is the lock let go, bounded by
    ENDED_OWNER_EXIT_WAIT_S; a holder whose attempt is live is refused at once."""
    lock, holder = take_lock(run_dir)
    deadline = time.monotonic() + ENDED_OWNER_EXIT_WAIT_S
    while holder and time.monotonic() < deadline:
        last = run_manifest.read(run_dir)
        if last is None or last.get("status") in run_manifest.LIVE:
            break
        time.sleep(0.05)
        lock, holder = take_lock(run_dir)
    return lock, holder


def rank_envs(env, world, master_port):
    """The environment of each process started: one, or `world` ranks with the environment
    rendezvous torch.distributed's env:// reads."""
    if world <= 1:
        return [env]
    port = str(master_port or free_port())
    return [
        dict(
            env,
            RANK=str(r),
            LOCAL_RANK=str(r),
            WORLD_SIZE=str(world),
            LOCAL_WORLD_SIZE=str(world),
            GROUP_RANK="0",
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=port,
        )
        for r in range(world)
    ]


def not_started(args, run_dir, log, guard, error):
    """The command could not be started (no such file, not executable): the run ends failed, saying
    why. Returns the exit code a shell gives a command it cannot run."""
    reason = f"cannot start {args.command[0]}: {error.strerror or error}"
    if args.native:
        run_manifest.mark_failed(run_dir, reason)
    else:
        finish(log, run_dir, "failed", reason)
    log.close()
    dismiss_guard(guard)
    print(f"fsdp_studio.supervise: {reason}", file=sys.stderr)
    return 127


def follow_runtime(attempt, manifest_before):
    """A native run: the runtime writes its own events, which this process merges into the stream;
    each poll turns what the stream took into run.json (running, the step, the end) and names the
    ranks once the runtime has started them."""
    runtime = attempt.runtime = RuntimeRun(attempt.run_dir)
    attempt.log.appended = runtime.take
    attempt.manifest_before = manifest_before
    run_dir, workers, parent = attempt.run_dir, attempt.workers, attempt.parent
    run_manifest.update(run_dir, {"pids": workers.own})
    # The attempt's processes follow the runtime's start in the stream at once: it names the ranks.
    attempt.log.after_start = lambda start: attempt.processes(runtime_processes(attempt, start))

    def on_poll():
        was_started = runtime.started
        fields = runtime.follow(write=False)
        if runtime.started and not was_started:
            # The ranks are there once the runtime has started: run.json says "running" and names them at once.
            pids = workers.refresh(force=True, write=False)
            if pids is not None:
                fields["pids"] = pids
        if fields:
            run_manifest.update(run_dir, fields)
        workers.refresh()
        if parent:
            parent.look()

    attempt.on_poll = on_poll


def runtime_processes(attempt, start):
    """A native run's processes past its owner: what it started (fsdp-train, mpirun, srun), and the
    ranks the runtime's run_start names."""
    child = attempt.children[0]
    launched = [
        {
            "pid": child.pid,
            "role": "launcher",
            "name": program_of(attempt.args.command),
            "host": socket.gethostname(),
        }
    ]
    ranks = ((start or {}).get("world") or {}).get("ranks") if isinstance((start or {}).get("world"), dict) else None
    for r in ranks if isinstance(ranks, list) else []:
        if isinstance(r, dict) and isinstance(r.get("pid"), int) and r["pid"] > 0:
            rank = {"pid": r["pid"], "role": "rank"}
            if isinstance(r.get("rank"), int) and r["rank"] >= 0:
                rank["rank"] = r["rank"]
            if isinstance(r.get("host"), str):
                rank["host"] = r["host"]
            launched.append(rank)
    return launched


def announce_command(attempt, manifest, world):
    """A person's command: metrics.jsonl gets the run_start the command does not write itself and
    the attempt's processes, then run.json says what the stream took: running."""
    snapshot = RuntimeRun(attempt.run_dir)
    attempt.log.appended = snapshot.take
    attempt.log.write(
        {
            "type": "run_start",
            "run_id": (manifest or {}).get("run_id", os.path.basename(attempt.run_dir)),
            "config": (manifest or {}).get("config", {}),
            "world": {
                "size": command_world(manifest, world),
                "ranks": [
                    {"rank": r, "host": socket.gethostname(), "device": "unknown", "pid": c.pid}
                    for r, c in enumerate(attempt.children)
                ],
            },
            "runtime": {"name": "fsdp-studio supervisor", "command": attempt.args.command},
        }
    )
    host = socket.gethostname()
    name = program_of(attempt.args.command)
    attempt.log.write(
        attempt.processes(
            [
                {"pid": c.pid, "role": "command", "name": name, "host": host, **({"rank": r} if world > 1 else {})}
                for r, c in enumerate(attempt.children)
            ]
        )
    )
    attempt.log.appended = None  # the command's end reaches run.json through finish()
    run_manifest.update(attempt.run_dir, {**snapshot.follow(write=False), "pids": attempt.workers.own})


def wait(attempt):
    """Waiting: until every process started has ended (one rank failing stops the others), then for
    a native run until the runtime has written its end; what is left of the attempt is killed.
    Returns the exit codes and the rank that failed first (wait_all)."""
    codes, failed = wait_all(attempt.children, on_poll=attempt.poll)
    runtime = attempt.runtime
    if runtime is not None:
        # The runtime may outlive the process this one started (fsdp-train or mpirun killed): it
        # watches its launcher and writes its own end; it gets the peers' grace to, then is killed.
        deadline = time.monotonic() + RUNTIME_END_GRACE_S
        while runtime.ended is None and attempt.workers.any_alive() and time.monotonic() < deadline:
            attempt.poll()
            time.sleep(0.1)
    attempt.workers.kill_left()
    for copier in attempt.copiers:
        copier.join(timeout=5)
        attempt.heartbeat.beat()  # a copier blocked on an output nobody reads: this process still polls
    return codes, failed


def end(attempt, codes, failed):
    """Ending: run.json's end (the runtime's, from its events and how its process ended; a person's
    command's, with run_end in metrics.jsonl), then the guard let go. Returns this process's exit
    code: the command's."""
    args, runtime = attempt.args, attempt.runtime
    # A stop signal that came as the command ended: SLURM may be ending the job.
    attempt.slurm_end.look()
    attempt.tell_stops()
    if runtime is not None:
        c = codes[0]
        parent = attempt.parent
        attempt.log.merge()
        runtime.end(
            attempt.manifest_before,
            attempt.frozen_reason
            or (parent.reason if parent and parent.reason else runtime_reason(args.command, c, attempt.last_words[0])),
            attempt.log,
        )
        code = 128 - c if c < 0 else c
    else:
        status, reason, code = command_end(args, attempt.env, attempt.stopped, codes, failed, attempt.last_words)
        if attempt.frozen_reason:
            status, reason = "failed", attempt.frozen_reason
        finish(attempt.log, attempt.run_dir, status, reason)
    # Merged to the end; the writers' files go (the guard, if it must act, finds nothing left to merge).
    attempt.log.close()
    dismiss_guard(attempt.guard)
    return code


def follow_command_world(attempt, manifest, started):
    """A person's command: once its ranks start, what their launcher told them (WORLD_SIZE, or how
    many distinct RANKs started) goes into run.json's world when it is not the command's count —
    torchrun, deepspeed without --num_gpus or a launcher option this side never read. The world the
    dashboard, its toasts and run.json show is then the ranks', with the command's count kept."""
    workers = attempt.workers
    world = dict((manifest or {}).get("world") or {})
    world["size"] = command_world(manifest, started)

    def on_poll():
        nonlocal world
        workers.refresh()
        learned = world_from_ranks(world, workers.world_seen())
        if learned is not None:
            world = learned
            run_manifest.update(attempt.run_dir, {"world": learned})

    attempt.on_poll = on_poll


def world_from_ranks(world, seen):
    """run.json's world once the ranks seen (WorkerPids.world_seen) disagree with its size: a
    WORLD_SIZE the ranks were given replaces it; a bare count of ranks started here only raises it
    (another node's ranks are not seen). The command's own count is kept as command_size (none
    where the command gave none: counted "launcher"). None when nothing changes."""
    if seen is None:
        return None
    n, told = seen
    size = world["size"]
    if n == size or (not told and n < size):
        return None
    learned = dict(world, size=n, counted="ranks")
    if world.get("counted", "command") == "command":
        learned["command_size"] = size
    # nproc_per_node and nnodes were the command's: kept only while they still multiply to the size.
    if learned.get("nproc_per_node", 1) * learned.get("nnodes", 1) != n:
        learned.pop("nproc_per_node", None)
        if learned.get("nnodes", 1) == 1 and n > 1:
            learned["nproc_per_node"] = n
    return learned


def command_world(manifest, started):
    """The ranks a person's command starts: the launcher's own count when it starts them itself
    (torchrun --nproc_per_node 2 is one process here and two ranks; the editor read the count from
    the command into run.json's world.size), else the processes started here (--nproc)."""
    size = ((manifest or {}).get("world") or {}).get("size")
    return size if isinstance(size, int) and not isinstance(size, bool) and size > started else started


def command_end(args, env, stopped, codes, failed, last_words):
    """How a person's command ended: (status, reason, exit code) — stopped when a stop signal came,
    completed when every rank exited 0, else failed naming the rank (or the command), how it ended
    and the last line it printed."""
    if stopped:
        return "stopped", f"stopped by {signal.Signals(stopped[0]).name}", 128 + stopped[0]
    if failed is None:
        return "completed", None, 0
    c = codes[failed]
    how = f"was killed by {signal.Signals(-c).name}" if c < 0 else f"exited with status {c}"
    who = f"rank {failed}" if len(codes) > 1 else os.path.basename(args.command[0])
    last = last_words[failed]
    reason = (
        f"{who} {how}{': ' + last if last else ''}{missing_module_hint(last, args.command, env, args.use_this_python)}"
    )
    return "failed", reason, 128 - c if c < 0 else c


#: The hidden first argument of the guard process (see start_guard).
GUARD_FLAG = "--guard-of-supervisor"
#: What the guard kills: the process group this supervisor leads, or (in a group that is not the
#: run's: a SLURM batch shell's) this supervisor and everything below it.
GROUP, TREE = "group", "tree"


def die_with_parent():
    """In each rank before it runs: killed (SIGKILL) when this supervisor dies, however it dies
    (prctl PR_SET_PDEATHSIG, Linux). Elsewhere nothing: the guard below still ends the group."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))
    except Exception:
        pass


def start_guard(run_dir, lock=None, attempt_id=""):
    """This supervisor owns the run: when it is killed (SIGKILL, the OOM killer), nothing of the run
    may go on without it. A guard process holds the read end of a pipe whose write end only this
    process has: when this process dies the pipe ends (or once this process has been stopped for
    FSDP_STUDIO_FROZEN_AFTER_S), and the guard kills the whole process group and everything below it
    — the ranks and whatever they started (torchrun's workers, mpirun's ranks) — then writes the
    run's end (failed, with the reason) as this supervisor would have, unless the runtime wrote one.
    The group, when this process leads its own (the editor's detached start makes it so); a group
    shared with a caller (a SLURM batch shell) is not the run's to kill: there the guard kills this
    process and everything below it (srun, whose job step's tasks SLURM then ends). The guard keeps
    the run folder's lock (`lock`) until it has killed them, so no resume starts beside what is left.
    The end it writes is this attempt's (`attempt_id`)."""
    scope = GROUP if leads_run_group() else TREE
    read_end, write_end = os.pipe()  # not inherited by the ranks (PEP 446)
    try:
        guard = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), GUARD_FLAG, run_dir, str(os.getpid()), attempt_id, scope],
            stdin=read_end,
            stdout=subprocess.DEVNULL,
            close_fds=True,
            pass_fds=() if lock is None else (lock,),
        )
    except OSError:
        os.close(write_end)
        return None
    finally:
        os.close(read_end)
    return write_end, guard


def dismiss_guard(guard):
    """The run ended as this supervisor says: the guard leaves without doing anything."""
    if guard is None:
        return
    write_end, process = guard
    try:
        os.write(write_end, b"ended\n")
    except OSError:
        pass
    os.close(write_end)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()


def guard_main(run_dir, supervisor_pid, attempt_id, scope=GROUP):
    # Stop's signals go to the whole group: the guard outlives them, to act if the supervisor does not.
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    # A stopped or hung supervisor says nothing and ends nothing: the guard also watches whether it
    # is stopped, and whether it still beats as it polls (heartbeat.py).
    how, detail = wait_for_owner(sys.stdin.fileno(), supervisor_pid)
    if how == "ended":
        return 0
    reason = guard_reason(supervisor_pid, how, detail)
    # Every process of the run first, the ranks before their launchers (mpirun and its ranks are in
    # sessions of their own, below the group; a SLURM step's are not below srun at all): none of
    # them is left to write an end of its own.
    roots = group_of(os.getpgrp()) if scope == GROUP else [supervisor_pid]
    wait_gone(kill_attempt(run_dir, attempt_id, roots, spare=(os.getpid(),)))
    # The stream's writer now: what the writers wrote that the supervisor had not merged yet, first.
    log = EventMerge(run_dir, attempt_id)
    log.resume()
    log.merge()
    # One end per attempt: one the runtime wrote before it was killed (it completed while its
    # supervisor was stopped) stands, and run.json takes it.
    runtime_end = end_in_log(run_dir, attempt_id)
    if runtime_end is None:
        finish(log, run_dir, "failed", reason)
    else:
        run_manifest.update(run_dir, RuntimeRun(run_dir).take_end(runtime_end))
    log.close()
    # Last, and never waiting: the stderr a hung supervisor blocked on may be this one's too.
    say(f"fsdp_studio.supervise: {reason}")
    if scope == GROUP:
        os.killpg(0, signal.SIGKILL)
    return 1


def guard_reason(supervisor_pid, how, detail):
    """The run's end the guard writes, naming the supervisor and what became of it."""
    if how == "stopped":
        return detail.reason(supervisor_pid, "its supervisor")
    if how == "hung":
        return hung_reason(supervisor_pid, detail)
    return f"its supervisor (pid {supervisor_pid}) was killed; every process of the run was stopped with it"


def parse_args(argv):
    p = argparse.ArgumentParser(prog="fsdp_studio.supervise", description=__doc__.split("\n\n")[0])
    p.add_argument("--run-dir", required=True)
    p.add_argument(
        "--nproc", type=int, default=1, help="ranks to start with the environment rendezvous (a plain python command)"
    )
    p.add_argument("--master-port", type=int, default=0)
    p.add_argument(
        "--native",
        action="store_true",
        help="the command is FSDP Studio's native runtime (fsdp-train, fsdp-train-native, or mpirun/srun around"
        " it): its own events in metrics.jsonl say how the run goes and ends, and the run folder's lock is its",
    )
    p.add_argument(
        "--with-parent",
        action="store_true",
        help="the process that started this one is the run's launcher (fsdp-train in a terminal): if it is"
        " killed, the run ends with it",
    )
    p.add_argument(
        "--manifest",
        help="the starting manifest (JSON) to write as run.json (default: $FSDP_RUN_MANIFEST; neither: keep"
        " the run.json there)",
    )
    p.add_argument(
        "--use-this-python",
        action="store_true",
        help="run a bare python/python3 first word of the command with the Python running this supervisor, and"
        " put that Python's folder first on the command's PATH (as activating its environment would), so that"
        " torchrun, accelerate and deepspeed come from it too",
    )
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    if args.command[:1] == ["--"]:
        args.command = args.command[1:]
    if not args.command:
        p.error("give the command after --")
    if args.nproc < 1:
        p.error("--nproc must be at least 1")
    return args


def child_env(run_dir, own_python=False):
    env = dict(os.environ)
    env[RUN_DIR_ENV] = run_dir
    if own_python:
        env["PATH"] = os.path.dirname(sys.executable) + (os.pathsep + env["PATH"] if env.get("PATH") else "")
    env["PYTHONPATH"] = PACKAGE_ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


#: A command's first word that names a Python by name only (python, python3, python3.11).
PYTHON_WORD = re.compile(r"^python(\d+(\.\d+)?)?$")


def with_this_python(command):
    """The command with a bare Python word first replaced by this supervisor's own interpreter (the
    launch spec's python:, or the Python extension's choice); a path or another launcher is kept."""
    if PYTHON_WORD.match(command[0]):
        return [sys.executable, *command[1:]]
    return command


#: What Python prints when an import fails: ModuleNotFoundError's message.
MISSING_MODULE = re.compile(r"No module named '([^']+)'")


def missing_module_hint(last_words, command, env, chosen=False):
    """For a command that ended on a missing module: which Python ran it (path and version), so that
    `No module named 'torch'` says where torch was looked for. Empty for any other failure."""
    m = MISSING_MODULE.search(last_words or "")
    if not m:
        return ""
    module = m.group(1).split(".")[0]
    python = interpreter_of(command, env)
    if python is None:
        return f" (the Python that ran {command[0]} was not found on its PATH)"
    if chosen and os.path.dirname(python) == os.path.dirname(sys.executable):
        fix = (
            "it was chosen by the launch spec's python: key (or the Python extension's selection):"
            " name one that has it there"
        )
    elif os.sep in command[0]:
        fix = "name one that has it in the command"
    else:
        fix = "name one that has it in the launch spec's python: key, or select one in the Python extension"
    return f" — the Python that ran it, {describe_python(python, env)}, has no {module}: {fix}"


def interpreter_of(command, env):
    """The Python that runs command: its first word when that is a Python, else the interpreter its
    script's #! line names (torchrun, accelerate and deepspeed are such scripts). None when the first
    word is not found on the command's PATH."""
    first = command[0]
    exe = first if os.sep in first else shutil.which(first, path=env.get("PATH"))
    if not exe:
        return None
    if PYTHON_WORD.match(os.path.basename(exe)):
        return exe
    try:
        with open(exe, "rb") as f:
            line = f.readline(512).decode("utf-8", "replace")
    except OSError:
        return exe
    if not line.startswith("#!"):
        return exe
    words = line[2:].split()
    if words and os.path.basename(words[0]) == "env":
        # #!/usr/bin/env [-S] python3: the word after env's options, found on the same PATH.
        names = [w for w in words[1:] if not w.startswith("-")]
        return shutil.which(names[0], path=env.get("PATH")) if names else exe
    return words[0] if words else exe


def describe_python(python, env):
    """ "PATH (Python X.Y.Z)" as that interpreter says it (sys.executable, sys.version); the path alone
    when it cannot be asked."""
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print(sys.executable); print(sys.version.split()[0])"],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        lines = out.stdout.split("\n")
        if out.returncode == 0 and len(lines) >= 2 and lines[1]:
            return f"{lines[0] or python} (Python {lines[1]})"
    except (OSError, subprocess.SubprocessError):
        pass
    return python


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_all(children, on_poll=None):
    """Waits for every child; the first failure stops the rest (SIGTERM, then SIGKILL). on_poll runs
    between looks.

    Returns the exit codes (negative: killed by that signal) and the index of the child that
    failed first, on its own (None when none failed).
    """
    codes = [None] * len(children)
    first = None
    failed_at = None
    while any(c is None for c in codes):
        ended = []
        for i, child in enumerate(children):
            if codes[i] is None:
                codes[i] = child.poll()
                if codes[i] not in (None, 0):
                    ended.append(i)
        if ended and first is None:
            # Of the ranks found failed together, one that exited by itself, not by a signal.
            first = sorted(ended, key=lambda i: (codes[i] or 0) < 0)[0]
            failed_at = time.monotonic()
            for other in children:
                if other.poll() is None:
                    other.send_signal(signal.SIGTERM)
        if failed_at is not None and time.monotonic() - failed_at > PEERS_GRACE_S:
            for other in children:
                if other.poll() is None:
                    other.kill()
        if on_poll:
            on_poll()
        time.sleep(0.1)
    return codes, first


#: The most of one stderr line kept to read it (a run_end event, a failure's last words), as the
#: printed-metrics decoder caps a line: the rest of a longer line is passed on, not held.
LINE_CAP = 64 * 1024


def copy_stderr(pipe, prefix, last_words, r):
    """Passes a rank's stderr on (to the run's stderr.log), each line marked with its rank, and keeps
    its last line: the words a failure is reported with. Read a chunk at a time, never a whole line,
    so a line of any length (a 200 MB one took 441 MB) costs a chunk and LINE_CAP of memory."""
    out = sys.stderr.buffer
    mark = prefix.encode()
    head = bytearray()  # the start of the line being copied, at most LINE_CAP bytes
    at_line_start = True
    while True:
        chunk = os.read(pipe.fileno(), 1 << 16)
        if not chunk:
            break
        start = 0
        while start < len(chunk):
            newline = chunk.find(b"\n", start)
            end = len(chunk) if newline < 0 else newline + 1
            if at_line_start:
                out.write(mark)
            out.write(chunk[start:end])
            head += chunk[start : min(end, start + LINE_CAP - len(head))]
            at_line_start = newline >= 0
            if at_line_start:
                read_stderr_line(bytes(head), last_words, r)
                head.clear()
            start = end
        out.flush()
    if head:
        read_stderr_line(bytes(head), last_words, r)
    pipe.close()


def read_stderr_line(line, last_words, r):
    """A run_end the runtime could not write to metrics.jsonl, or else the rank's last words."""
    text = line.decode("utf-8", "replace").strip()
    event = run_end_in(text)
    if event is not None:
        stderr_run_end[0] = event
        return
    # PyTorch 2 marks a rank's uncaught error "[rank1]: ..."; the reason names the rank already.
    text = re.sub(r"^\[rank\d+\]:\s*", "", text)
    if text:
        last_words[r] = text[:300]


def finish(log, run_dir, status, reason, step=None):
    """The run's end, as its owner says it: the run_end event into the stream (`log`, an
    EventMerge), then run.json from what the stream took (RuntimeRun.end_with: metrics.jsonl
    replaced by a link or a FIFO during the run, or a full disk, and the end still reaches run.json)."""
    log.merge()
    step = last_step(log.path) if step is None else step
    event = {"type": "run_end", "status": status, "step": step, **({"reason": reason} if reason else {})}
    RuntimeRun(run_dir).end_with(log, event)


def last_step(metrics_path, tail=1 << 16):
    """The last step logged (from the end of metrics.jsonl), 0 when none."""
    # A regular file only, opened without blocking: a FIFO named metrics.jsonl would hang the supervisor.
    lines = read_tail(metrics_path, tail).decode("utf-8", "replace").splitlines()
    for line in reversed(lines):
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("type") in ("scalars", "step") and isinstance(e.get("step"), int):
            return e["step"]
    return 0


if __name__ == "__main__":
    sys.exit(main())
