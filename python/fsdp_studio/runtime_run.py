"""The native runtime under its run's supervisor (supervise.py --native): the runtime writes its
events, which the supervisor merges into the run's stream, and holds the run folder's lock; run.json
is a snapshot of that stream (RuntimeRun: what it took of the run_start, steps and run_end), and
this says how the run ended when the runtime could not (native/FORMATS.md, "The run folder and its
owner")."""

import json
import os
import signal
import time
from typing import Any

from fsdp_studio import run_manifest

#: A native runtime whose launcher (fsdp-train, mpirun) is gone ends itself within a second or two,
#: saying so; on a loaded machine it gets this long before it is killed.
RUNTIME_END_GRACE_S = 30.0


#: How the native runtime prints its run_end when it cannot append it to metrics.jsonl (a full disk).
RUN_END_LINE = "fsdp-train-native: run_end "
#: A run_end found on the runtime's stderr (RUN_END_LINE), as a one-slot list the copier fills.
stderr_run_end = [None]


def run_end_in(line):
    """The run_end event a stderr line carries (RUN_END_LINE), else None."""
    if not line.startswith(RUN_END_LINE):
        return None
    try:
        event = json.loads(line[len(RUN_END_LINE) :])
    except ValueError:
        return None
    return event if isinstance(event, dict) and event.get("type") == "run_end" else None


class ParentWatch:
    """--with-parent: the process that started this one (fsdp-train in a terminal) is the run's
    launcher; if it is killed outright, nothing of the run goes on without it. What this process
    started is killed; the runtime, which watches that process as its launcher, then ends the run
    itself, saying so (its run_end), and what is left is killed after RUNTIME_END_GRACE_S. `reason`
    is the end when the runtime wrote none."""

    def __init__(self, children):
        self.pid = os.getppid()
        self.children = children
        self.reason = None

    def look(self):
        if self.reason is not None or os.getppid() == self.pid:
            return
        self.reason = (
            f"the run's launcher (pid {self.pid}, fsdp-train) is gone: every process of the run was stopped with it"
        )
        for child in self.children:
            if child.poll() is None:
                child.kill()


class RuntimeRun:
    """run.json's running, step and end as a snapshot of the run's stream: fed each event its owner's
    merge appended to metrics.jsonl (event_merge.EventMerge.appended), in that order, and nothing
    else, so run.json never says what the stream has not said first — running from the attempt's
    run_start, its step at most once a second, its end from its run_end (native/FORMATS.md, "The run
    folder and its owner")."""

    def __init__(self, run_dir):
        self.run_dir = run_dir
        #: The events the stream took since the last follow().
        self.fresh: list[dict[str, Any]] = []
        self.started = False
        self.ended = None
        self.step = 0
        self.step_written = 0.0  # when run.json's step was last written
        self.step_in_manifest = None

    def take(self, event):
        """One event as the stream took it (the merge calls this once the line is in metrics.jsonl)."""
        self.fresh.append(event)

    def follow(self, write=True):
        """The stream's new events; returns the fields of run.json they change (written unless write=False)."""
        fields: dict[str, Any] = {}
        events, self.fresh = self.fresh, []
        for e in events:
            kind = e.get("type")
            if kind == "run_start":
                self.started = True
                self.step = e.get("start_step", 0) if isinstance(e.get("start_step"), int) else 0
                fields.update(status="running", step=self.step)
                config, runtime = e.get("config"), e.get("runtime")
                training = config.get("training") if isinstance(config, dict) else None
                steps = training.get("max_steps") if isinstance(training, dict) else None
                if isinstance(steps, int):
                    fields["max_steps"] = steps
                version = runtime.get("version") if isinstance(runtime, dict) else None
                if version:
                    fields["runtime_version"] = version
                if e.get("resumed_from"):
                    fields["resumed_from"] = e["resumed_from"]
            elif kind == "step" and isinstance(e.get("step"), int):
                self.step = max(self.step, e["step"])
            elif kind == "run_end" and self.ended is None:
                fields.update(self.take_end(e))
        now = time.monotonic()
        # The step at most once a second, and only when it moved (a paused run leaves run.json alone).
        if self.started and not self.ended and self.step != self.step_in_manifest and now - self.step_written >= 1.0:
            fields.setdefault("step", self.step)
        if "step" in fields:
            self.step_written = now
            self.step_in_manifest = fields["step"]
        if fields and write:
            run_manifest.update(self.run_dir, fields)
        return fields

    def take_end(self, e):
        """A run_end event as the run's end: the fields of run.json it sets."""
        self.ended = e
        if isinstance(e.get("step"), int):
            self.step = e["step"]
        fields = {"status": e.get("status", "failed"), "step": self.step}
        if e.get("reason"):
            fields["end_reason"] = e["reason"]
        return fields

    def end_with(self, stream, event):
        """An end this owner (or its guard) writes: into the stream (`stream`, an EventMerge), then
        run.json from what the stream took. Where the stream could not take it — a full disk stopped
        the merge, metrics.jsonl is no regular file — run.json still gets the end: the one thing it
        says that the stream does not."""
        stream.appended = self.take
        stream.write(event)
        self.follow()
        if self.ended is None:
            run_manifest.update(self.run_dir, self.take_end(event))

    def end(self, before, reason, stream):
        """After the runtime's process ended: its run_end, if the stream took one, is the run's end.
        When it never started the run (no run_start: a refused --resume, a config the runtime refused),
        the stream holds nothing of this attempt: in a folder that had a run, run.json is put back as
        it was, so that run keeps the end it had; in a new one it says failed, with the reason.
        Otherwise the run failed, with the reason: a runtime that stops writes its run_end "stopped"
        (a stop signal this process noted is no end of the run by itself). An end the runtime did not
        write in its events goes into the stream (`stream`, event_merge.EventMerge) as this owner's,
        marked stand_in, before run.json: one end per attempt."""
        self.follow()
        if self.ended is None and stderr_run_end[0] is not None:
            # The runtime's own end, which it could not append to its events (a full disk): the
            # stream takes it unless the disk stopped the merge too.
            self.end_with(stream, stderr_run_end[0])
            return
        if self.ended is not None:
            return
        if not self.started:
            # The stream holds nothing of an attempt that never started (issue 26: a refused resume
            # writes no run_start or run_end), so run.json alone says it.
            if before is not None:
                run_manifest.write_bytes(self.run_dir, before)
            else:
                run_manifest.update(self.run_dir, {"status": "failed", "step": 0, "end_reason": reason})
            return
        # The runtime ended without its run_end (killed, its launcher killed): the owner writes it,
        # and readers add what they know (the exit signal, memory, the last stderr lines:
        # core/runs/run-end.ts).
        self.end_with(
            stream, {"type": "run_end", "status": "failed", "step": self.step, "reason": reason, "stand_in": True}
        )


def runtime_reason(command, code, last):
    """Why a native runtime's process ended without its run_end: `fsdp-train` says so in its last
    line ("fsdp-train: the run ended: <reason>"); otherwise the process, how it ended and the last
    line it printed."""
    if last and last.startswith(CLI_REASON):
        return last[len(CLI_REASON) :]
    how = f"was killed by signal {-code} ({signal.Signals(-code).name})" if code < 0 else f"exited with status {code}"
    return f"{os.path.basename(command[0])} {how}{': ' + last if last else ''}"


#: Execs its arguments with the launcher variables naming the process itself (the exec keeps the
#: pid): the native runtime's rank 0 watches that process (fsdp-train, or mpirun whose ranks it is)
#: and ends the run, saying so, if it is killed (native/src/train/job_watch.h).
LAUNCHER_SCRIPT = (
    "FSDP_LAUNCHER_PID=$$ FSDP_LAUNCHER_HOST=$(uname -n) FSDP_LAUNCHER_NAME=${1##*/};"
    ' export FSDP_LAUNCHER_PID FSDP_LAUNCHER_HOST FSDP_LAUNCHER_NAME; exec "$@"'
)


def launcher_trampoline(command):
    return ["/bin/sh", "-c", LAUNCHER_SCRIPT, "fsdp-launcher", *command]


#: How `fsdp-train` (cli/fsdp-train.ts) begins the last line it prints when the runtime ended
#: without saying why: the rest is the reason for run.json.
CLI_REASON = "fsdp-train: the run ended: "
