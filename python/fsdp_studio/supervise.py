"""Runs a person's training command for FSDP Studio, in the run folder the editor made.

    python3 .../fsdp_studio/supervise.py --run-dir DIR [--nproc N] [--use-this-python] -- COMMAND...

The editor starts this in a session of its own, after writing DIR/run.json (status "starting",
the command, this process's id as the run's pid and process group). It marks the run running,
writes run_start to DIR/metrics.jsonl, starts COMMAND (or N copies of it with the environment
rendezvous torch.distributed's env:// reads: RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
MASTER_ADDR, MASTER_PORT) in the same process group, with this package on PYTHONPATH and
FSDP_STUDIO_RUN_DIR set, and when it ends writes run_end and the final status to run.json:
completed, stopped (a stop signal came), or failed (with which rank ended how, and the last line
it printed to stderr; each rank's stderr lines are marked with its rank). One rank failing stops
the others, as torchrun does. A failure on a missing module (No module named 'torch') names the
Python that ran the command, its path and version. With --use-this-python (the launch spec's
python:, or the Python extension's selection) the Python running this supervisor also runs a bare
python/python3 first word of the command, and its folder comes first on the command's PATH.

This process owns the run (native/FORMATS.md, "The run folder and its owner"): nothing of the run
outlives it. Its ranks die with it (PR_SET_PDEATHSIG); when it leads the run's process group, a
guard process ends the whole group and writes the run's end, failed with the reason, if this
process is killed (start_guard). Any Python >= 3.9, standard library only.

Stop signals go to the whole process group (the editor's Stop, a terminal's Ctrl-C): every rank,
torchrun, accelerate and deepspeed get them directly, so this process does not forward them; it
only notes that the run was stopped and waits for the command to end. Launchers that start their
workers in sessions of their own (torchrun and accelerate do) pass the signal on themselves; the
workers' pids are added to run.json's pids as they appear, so that a Stop that has to kill the
group kills them too, and any still alive when the command has ended are killed then.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if PACKAGE_ROOT not in sys.path:
    sys.path.insert(0, PACKAGE_ROOT)

from fsdp_studio._events import RUN_DIR_ENV, EventLog  # noqa: E402

#: A rank that failed gets the others this long to end after SIGTERM, then SIGKILL.
PEERS_GRACE_S = 10.0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [GUARD_FLAG]:
        return guard_main(argv[1], int(argv[2]))
    args = parse_args(argv)
    run_dir = os.path.abspath(args.run_dir)
    log = EventLog(run_dir)
    manifest = read_manifest(run_dir)
    guard = start_guard(run_dir)
    stopped = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: stopped.append(signum))

    world = args.nproc
    env = child_env(run_dir, own_python=args.use_this_python)
    if args.use_this_python:
        args.command = with_this_python(args.command)
    ranks = []
    if world > 1:
        port = str(args.master_port or free_port())
        for r in range(world):
            ranks.append(dict(env, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(world), GROUP_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=port))
    else:
        ranks.append(env)
    try:
        children = [subprocess.Popen(args.command, env=e, stderr=subprocess.PIPE, preexec_fn=die_with_parent) for e in ranks]
    except OSError as e:
        reason = f"cannot start {args.command[0]}: {e.strerror or e}"
        finish(log, run_dir, manifest, "failed", reason)
        dismiss_guard(guard)
        print(f"fsdp_studio.supervise: {reason}", file=sys.stderr)
        return 127
    last_words = [None] * len(children)
    copiers = [threading.Thread(target=copy_stderr, args=(c.stderr, f"[rank {r}] " if world > 1 else "", last_words, r), daemon=True) for r, c in enumerate(children)]
    for copier in copiers:
        copier.start()
    update_manifest(run_dir, {"status": "running", "pids": [os.getpid()] + [c.pid for c in children]})
    log.write({
        "type": "run_start",
        "run_id": (manifest or {}).get("run_id", os.path.basename(run_dir)),
        "config": (manifest or {}).get("config", {}),
        "world": {"size": world, "ranks": [{"rank": r, "host": socket.gethostname(), "device": "unknown", "pid": c.pid} for r, c in enumerate(children)]},
        "runtime": {"name": "fsdp-studio supervisor", "command": args.command},
    })

    workers = WorkerPids(run_dir, [os.getpid()] + [c.pid for c in children])
    codes, r = wait_all(children, on_poll=workers.refresh)
    workers.kill_left()
    for copier in copiers:
        copier.join(timeout=5)
    if stopped:
        status, reason = "stopped", f"stopped by {signal.Signals(stopped[0]).name}"
        code = 128 + stopped[0]
    elif r is None:
        status, reason, code = "completed", None, 0
    else:
        c = codes[r]
        how = f"was killed by {signal.Signals(-c).name}" if c < 0 else f"exited with status {c}"
        who = f"rank {r}" if world > 1 else args.command[0]
        last = last_words[r]
        status, reason = "failed", f"{who} {how}{': ' + last if last else ''}{missing_module_hint(last, args.command, env, args.use_this_python)}"
        code = 128 - c if c < 0 else c
    finish(log, run_dir, manifest, status, reason)
    dismiss_guard(guard)
    return code


#: The hidden first argument of the guard process (see start_guard).
GUARD_FLAG = "--guard-of-supervisor"


def die_with_parent():
    """In each rank before it runs: killed (SIGKILL) when this supervisor dies, however it dies
    (prctl PR_SET_PDEATHSIG, Linux). Elsewhere nothing: the guard below still ends the group."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))
    except Exception:  # noqa: BLE001 - not Linux, or no prctl: the guard covers the group
        pass


def start_guard(run_dir):
    """This supervisor owns the run: when it is killed (SIGKILL, the OOM killer), nothing of the run
    may go on without it. A guard process holds the read end of a pipe whose write end only this
    process has: when this process dies the pipe ends, and the guard writes the run's end
    (failed, with the reason) as this supervisor would have, then kills the whole process group —
    the ranks and whatever they started (torchrun's workers), which PR_SET_PDEATHSIG alone does not
    reach. Only when this process leads its own group (the editor's detached start makes it so):
    a group shared with a caller (a SLURM batch shell) is not the run's to kill."""
    if os.getpgrp() != os.getpid():
        return None
    read_end, write_end = os.pipe()  # not inherited by the ranks (PEP 446)
    try:
        guard = subprocess.Popen([sys.executable, os.path.abspath(__file__), GUARD_FLAG, run_dir, str(os.getpid())], stdin=read_end, stdout=subprocess.DEVNULL, close_fds=True)
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


def guard_main(run_dir, supervisor_pid):
    # Stop's signals go to the whole group: the guard outlives them, to act if the supervisor does not.
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    said = sys.stdin.buffer.read()
    if said.startswith(b"ended"):
        return 0
    reason = f"its supervisor (pid {supervisor_pid}) was killed; every process of the run was stopped with it"
    finish(EventLog(run_dir), run_dir, read_manifest(run_dir), "failed", reason)
    print(f"fsdp_studio.supervise: {reason}", file=sys.stderr, flush=True)
    os.killpg(0, signal.SIGKILL)
    return 1


def parse_args(argv):
    p = argparse.ArgumentParser(prog="fsdp_studio.supervise", description=__doc__.split("\n\n")[0])
    p.add_argument("--run-dir", required=True)
    p.add_argument("--nproc", type=int, default=1, help="ranks to start with the environment rendezvous (a plain python command)")
    p.add_argument("--master-port", type=int, default=0)
    p.add_argument("--use-this-python", action="store_true", help="run a bare python/python3 first word of the command with the Python running this supervisor, and put that Python's folder first on the command's PATH (as activating its environment would), so that torchrun, accelerate and deepspeed come from it too")
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
        return [sys.executable] + command[1:]
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
        fix = "it was chosen by the launch spec's python: key (or the Python extension's selection): name one that has it there"
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
    """"PATH (Python X.Y.Z)" as that interpreter says it (sys.executable, sys.version); the path alone
    when it cannot be asked."""
    try:
        out = subprocess.run([python, "-c", "import sys; print(sys.executable); print(sys.version.split()[0])"], env=env, capture_output=True, text=True, timeout=30)
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
            first = sorted(ended, key=lambda i: codes[i] < 0)[0]
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


class WorkerPids:
    """Keeps run.json's pids current with the command's descendants (Linux /proc), looked at every
    second; kill_left() ends those that outlived the command (workers in sessions of their own)."""

    def __init__(self, run_dir, pids):
        self.run_dir = run_dir
        self.own = list(pids)
        self.seen = {}  # pid: its start time (a pid used again later is another process)
        self.next_look = 0.0

    def refresh(self):
        now = time.monotonic()
        if now < self.next_look:
            return
        self.next_look = now + 1.0
        found = {pid: started for pid, started in descendants(self.own[1:]).items() if pid not in self.seen}
        if found:
            self.seen.update(found)
            update_manifest(self.run_dir, {"pids": self.own + list(self.seen)})

    def kill_left(self):
        alive = process_table()
        for pid, started in self.seen.items():
            if pid in alive and alive[pid][1] == started:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass


def process_table():
    """{pid: (parent pid, start time)} of every process, from /proc; empty where there is no /proc."""
    table = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                line = f.read().decode("ascii", "replace")
            # The command name (field 2) is in parentheses and may hold spaces: the fields after the last ")".
            fields = line[line.rindex(")") + 2:].split()
            table[int(name)] = (int(fields[1]), int(fields[19]))
        except (OSError, ValueError, IndexError):
            continue
    return table


def descendants(roots):
    """{pid: start time} of every process below `roots`."""
    table = process_table()
    out, frontier = {}, set(roots)
    while frontier:
        below = [pid for pid, (ppid, _) in table.items() if ppid in frontier and pid not in out]
        out.update((pid, table[pid][1]) for pid in below)
        frontier = set(below)
    return out


def copy_stderr(pipe, prefix, last_words, r):
    """Passes a rank's stderr on (to the run's stderr.log), each line marked with its rank, and keeps
    its last line: the words a failure is reported with."""
    out = sys.stderr.buffer
    for line in iter(pipe.readline, b""):
        out.write(prefix.encode() + line)
        out.flush()
        text = line.decode("utf-8", "replace").strip()
        # PyTorch 2 marks a rank's uncaught error "[rank1]: ..."; the reason names the rank already.
        text = re.sub(r"^\[rank\d+\]:\s*", "", text)
        if text:
            last_words[r] = text[:300]
    pipe.close()


def finish(log, run_dir, manifest, status, reason):
    step = last_step(log.path)
    log.write({"type": "run_end", "status": status, "step": step, **({"reason": reason} if reason else {})})
    update_manifest(run_dir, {"status": status, "step": step, **({"end_reason": reason} if reason else {})})


def last_step(metrics_path, tail=1 << 16):
    """The last step logged (from the end of metrics.jsonl), 0 when none."""
    try:
        with open(metrics_path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - tail))
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return 0
    for line in reversed(lines):
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("type") in ("scalars", "step") and isinstance(e.get("step"), int):
            return e["step"]
    return 0


#: The most a run.json may hold (MANIFEST_MAX_BYTES in core/protocol/regular-file.ts).
MAX_MANIFEST_BYTES = 32 * 1024 * 1024


def read_manifest(run_dir):
    """run.json as every reader of a run folder reads it: a regular file only, opened without
    blocking (a FIFO named run.json would wait for a writer for ever), within the size a manifest may
    have. None when absent, refused or unreadable."""
    path = os.path.join(run_dir, "run.json")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_MANIFEST_BYTES:
            return None
        with os.fdopen(fd, "rb") as f:
            fd = None
            return json.loads(f.read(MAX_MANIFEST_BYTES).decode("utf-8"))
    except (OSError, ValueError):
        return None
    finally:
        if fd is not None:
            os.close(fd)


def update_manifest(run_dir, fields):
    """Merges fields into run.json (written atomically), as every writer after the launcher does."""
    current = read_manifest(run_dir)
    if current is None:
        return  # the launcher makes run.json; without it there is nothing to keep current
    current.update(fields)
    if fields.get("status") in ("starting", "running"):
        current.pop("end_reason", None)
    current["updated"] = time.time()
    path = os.path.join(run_dir, "run.json")
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(current, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main())
