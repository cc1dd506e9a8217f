"""A process of a run that is frozen: stopped by SIGSTOP (or SIGTSTP, SIGTTIN, SIGTTOU) and left so.
A stopped process answers nothing — a stopped mpirun stalls its ranks, a stopped supervisor writes
no end — so its owner or the guard watching the owner (supervise.py) notices it by its state in
/proc/PID/stat ('T') and, once it has been stopped for FSDP_STUDIO_FROZEN_AFTER_S seconds
(default 60), ends the run naming it and kills every process of it.

A process stopped by a debugger (gdb, strace: state 't', "tracing stop") is not frozen: a person is
looking at it. Linux only; elsewhere nothing is ever found frozen."""

import os
import signal
import sys
import time

from fsdp_studio import run_manifest
from fsdp_studio.run_folder_watch import EventFollower
from fsdp_studio.run_processes import process_table

#: The environment variable that sets how long a process of the run may stay stopped, in seconds.
FROZEN_AFTER_ENV = "FSDP_STUDIO_FROZEN_AFTER_S"
DEFAULT_FROZEN_AFTER_S = 60.0


def frozen_after_s(env=None):
    """FSDP_STUDIO_FROZEN_AFTER_S, or the default when it is unset; a value that is not a positive
    number is named on stderr and the default used."""
    return seconds_setting(FROZEN_AFTER_ENV, DEFAULT_FROZEN_AFTER_S, env)


def seconds_setting(name, default, env=None):
    """A number of seconds from the environment variable `name`, or `default` when it is unset; a
    value that is not a positive number is named on stderr and the default used."""
    text = (os.environ if env is None else env).get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        print(f"fsdp_studio: {name}={text!r} is not a positive number of seconds: using {default:g}", file=sys.stderr)
        return default
    return value


def state_of(pid):
    """The process's state letter in /proc/PID/stat (R, S, D, T, t, Z, …); None when it is gone or
    there is no /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            line = f.read().decode("ascii", "replace")
        # The command name is in parentheses and may hold spaces: the state follows the last ")".
        return line[line.rindex(")") + 2 : line.rindex(")") + 3] or None
    except (OSError, ValueError):
        return None


def is_stopped(pid):
    """Whether the process is stopped by a signal (state 'T'); False when it is gone, traced ('t')
    or there is no /proc."""
    return state_of(pid) == "T"


def name_of(pid):
    """What a person calls the process: its program, the script's name when an interpreter (node,
    python) runs one (fsdp-train, not node)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            words = [w.decode("utf-8", "replace") for w in f.read().split(b"\0") if w]
    except OSError:
        return "a process"
    return program_of(words)


def program_of(words):
    """name_of() for a command line given as its words."""
    if not words:
        return "a process"
    program = os.path.basename(words[0])
    if program.startswith(("node", "python")) and len(words) > 1 and not words[1].startswith("-"):
        program = os.path.basename(words[1])
        for ext in (".mjs", ".cjs", ".js", ".ts", ".py"):
            if program.endswith(ext):
                program = program[: -len(ext)]
    return program


class FrozenWatch:
    """Tells which of the processes it is shown has been stopped for `after_s` seconds or more."""

    def __init__(self, after_s=None):
        self.after_s = frozen_after_s() if after_s is None else after_s
        self.since = {}  # pid: when it was first seen stopped (monotonic)

    def look(self, pids):
        """The first of `pids` stopped for after_s or more, else None."""
        now = time.monotonic()
        stopped = {pid for pid in pids if is_stopped(pid)}
        self.since = {pid: self.since.get(pid, now) for pid in stopped}
        for pid in pids:
            if pid in self.since and now - self.since[pid] >= self.after_s:
                return pid
        return None

    def reason(self, pid, name=None):
        """The run's end for a frozen process, naming it and the setting."""
        return (
            f"{name or name_of(pid)} (pid {pid}) was stopped (SIGSTOP) for {self.after_s:g} s"
            f" ({FROZEN_AFTER_ENV}): every process of the run was killed"
        )


def process_tree(roots):
    """`roots` and every process below them, deepest first (Linux /proc; the roots alone elsewhere)."""
    table = process_table()
    levels = [[pid for pid in roots if pid in table or not table]]
    seen = set(levels[0])
    while levels[-1]:
        below = [pid for pid, (ppid, _) in table.items() if ppid in levels[-1] and pid not in seen]
        seen.update(below)
        levels.append(below)
    return [pid for level in reversed(levels) for pid in level]


def kill_tree(roots, spare=()):
    """SIGKILL to `roots` and everything below them, but `spare`, the deepest first: the ranks die
    before their launcher, so none of them sees its launcher gone and writes a second end of the run."""
    killed = []
    for pid in process_tree(roots):
        if pid not in spare:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except OSError:
                pass
    return killed


def wait_gone(pids, timeout_s=10.0):
    """Until every one of `pids` has ended (gone, or a zombie: its end written, if at all), at most
    timeout_s: a write a killed process was in the middle of is then in the file."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(state_of(pid) not in (None, "Z") for pid in pids):
        time.sleep(0.05)


def group_of(pgid):
    """The processes of a process group (Linux /proc; empty elsewhere)."""
    out = []
    for name in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                line = f.read().decode("ascii", "replace")
            if int(line[line.rindex(")") + 2 :].split()[2]) == pgid:
                out.append(int(name))
        except (OSError, ValueError, IndexError):
            continue
    return out


def end_in_log(run_dir, attempt_id):
    """The run_end of this attempt that metrics.jsonl already holds (the runtime's), else None."""
    manifest = run_manifest.read(run_dir) or {}
    log_from = (manifest.get("attempt") or {}).get("log_from", 0) if isinstance(manifest.get("attempt"), dict) else 0
    events = EventFollower(os.path.join(run_dir, "metrics.jsonl"), log_from if isinstance(log_from, int) else 0)
    found = None
    while True:
        batch = events.read_new()
        if not batch:
            return found
        for e in batch:
            if e.get("type") == "run_end" and e.get("attempt") in (None, attempt_id):
                found = e
