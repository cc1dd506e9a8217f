"""A SLURM job's end, recorded in run.json by the run's owner in the job's batch step (supervise.py),
not by an editor that happens to watch the job (issue 41: readers never write).

SLURM ends a job it cancels (scancel), times out or preempts by sending every process of it SIGTERM,
then SIGKILL KillWait seconds later (30 by default). In between, the controller already holds the
job as COMPLETING with why in its reason (TimeLimit for the time limit, None for scancel), so the
owner asks at each stop signal it gets — squeue, the state and reason only, with no job name to
parse — and when SLURM is ending the job writes slurm.final_state, final_reason and ended: what a
reader shows once the controller has forgotten the job (MinJobAge, 300 s by default) on a cluster
without accounting. A stop the run asked for itself (the batch shell's time-limit trap, Stop's
`scancel --signal`) leaves the job RUNNING and nothing is recorded.

A job that ends by itself needs no record: its owner writes the run's end as for any run. One that
never ran (cancelled while queued) or lost its owner outright (SIGKILL, a node failure) has no one
to record it: readers say what SLURM, or the run folder, tells them (runs/slurm/slurm-state.ts).
"""

import os
import shutil
import subprocess

from fsdp_studio import run_manifest

#: The job this process runs in (SLURM sets it in every step of a job).
JOB_ID_ENV = "SLURM_JOB_ID"
#: The unit separator between squeue's fields (runs/slurm/slurm-state.ts FIELD_SEPARATOR).
FIELD_SEPARATOR = "\x1f"
#: The state, the reason, and the end time (epoch seconds under SLURM_TIME_FORMAT=%s).
SQUEUE_FORMAT = FIELD_SEPARATOR.join(["%T", "%r", "%e"])
#: The slurm fields of run.json that say the job ended.
RECORD_KEYS = ("final_state", "final_reason", "ended")
#: States in which the job no longer runs: SLURM already settled why.
ENDED_STATES = ("CANCELLED", "TIMEOUT", "DEADLINE", "PREEMPTED", "NODE_FAIL", "OUT_OF_MEMORY", "FAILED", "COMPLETED")
#: squeue's answer may take a while on a busy controller; KillWait is the bound that matters.
SQUEUE_TIMEOUT_S = 10.0


def ending_state(state, reason):
    """The end SLURM is giving the job, from its state and reason while it completes: TIMEOUT for
    the time limit, PREEMPTED for a preemption, CANCELLED for scancel; None while it still runs."""
    if state in ENDED_STATES:
        return state
    if state != "COMPLETING":
        return None
    if reason == "TimeLimit":
        return "TIMEOUT"
    if "preempt" in (reason or "").lower():
        return "PREEMPTED"
    return "CANCELLED"


class SlurmJobEnd:
    """The owner's record of its SLURM job's end. `stopped`: the stop signals the owner noted (its
    handlers append them); look() asks SLURM once per new one."""

    def __init__(self, run_dir, manifest, stopped):
        self.run_dir = run_dir
        self.stopped = stopped
        slurm = (manifest or {}).get("slurm")
        job = os.environ.get(JOB_ID_ENV)
        # Only the job run.json names: a job submitted by hand from job.sbatch is not the run's current one.
        self.job_id = job if job and isinstance(slurm, dict) and slurm.get("job_id") == job else None
        self.seen = 0
        self.recorded = False

    def started(self):
        """The job runs (again: requeued after its time limit or a preemption, under the same id): an
        end recorded for it earlier is no longer its end."""
        slurm = self.slurm_of_run()
        if slurm is not None and any(k in slurm for k in RECORD_KEYS):
            run_manifest.update(self.run_dir, {"slurm": {k: v for k, v in slurm.items() if k not in RECORD_KEYS}})

    def look(self):
        """After a new stop signal: when SLURM is ending the job, its end goes into run.json."""
        if self.job_id is None or self.recorded or len(self.stopped) <= self.seen:
            return
        self.seen = len(self.stopped)
        asked = ask_squeue(self.job_id)
        if asked is None:
            return
        state, reason, ended = asked
        final = ending_state(state, reason)
        slurm = self.slurm_of_run()
        if final is None or slurm is None:
            return
        record = {"final_state": final}
        if reason and reason not in ("None", "(null)"):
            record["final_reason"] = reason
        if ended is not None:
            record["ended"] = ended
        run_manifest.update(self.run_dir, {"slurm": dict(slurm, **record)})
        self.recorded = True

    def slurm_of_run(self):
        """run.json's slurm object as it is now, when it still names this job; else None."""
        if self.job_id is None:
            return None
        slurm = (run_manifest.current(self.run_dir) or {}).get("slurm")
        return slurm if isinstance(slurm, dict) and slurm.get("job_id") == self.job_id else None


def ask_squeue(job_id):
    """(state, reason, end time or None) of the job as the controller holds it; None when it cannot
    be asked (no squeue here, the controller not answering) or does not know the job."""
    squeue = shutil.which("squeue")
    if squeue is None:
        return None
    argv = [squeue, "--noheader", "--states=all", f"--jobs={job_id}", f"--format={SQUEUE_FORMAT}"]
    try:
        out = subprocess.run(
            argv,
            env=dict(os.environ, SLURM_TIME_FORMAT="%s"),
            capture_output=True,
            text=True,
            timeout=SQUEUE_TIMEOUT_S,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    for line in out.stdout.splitlines():
        fields = line.split(FIELD_SEPARATOR)
        if len(fields) == 3 and fields[0].strip():
            end = fields[2].strip()
            return fields[0].strip(), fields[1].strip(), int(end) if end.isdigit() and int(end) > 0 else None
    return None
