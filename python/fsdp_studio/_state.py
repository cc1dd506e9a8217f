"""Where this process logs, and which step it is on: shared by log(), watch() and the callbacks."""

import os
import sys

from ._events import RUN_DIR_ENV, EventLog, rank

_log = None
_warned = False
_explicit_step = None
_last_logged = None
_forwards = 0


def init(run_dir=None):
    """Logs to `run_dir` (default: the run folder FSDP Studio launched this script in)."""
    global _log
    run_dir = run_dir or os.environ.get(RUN_DIR_ENV)
    # Under the run's owner this rank's events go to a file of its own, which the owner merges.
    _log = EventLog(run_dir, own_file=lambda: f"rank{rank()}.jsonl") if run_dir else None
    return _log


def event_log():
    """The run's event log, or None (with one warning) when there is no run folder."""
    global _warned
    if _log is None and os.environ.get(RUN_DIR_ENV):
        init()
    if _log is None and not _warned:
        _warned = True
        print(
            "fsdp_studio: no run folder (the script was not launched by FSDP Studio, and "
            "fsdp_studio.init(run_dir=...) was not called): nothing is logged",
            file=sys.stderr,
        )
    return _log


def set_step(step):
    """Says which optimizer step the next forward and backward belong to."""
    global _explicit_step
    _explicit_step = int(step)


def logged(step):
    global _last_logged
    _last_logged = int(step)


def counted_forward():
    global _forwards
    _forwards += 1


def current_step():
    """The step anomalies are reported at: set_step's, else the one after the last logged, else
    the number of training forwards so far."""
    if _explicit_step is not None:
        return _explicit_step
    if _last_logged is not None:
        return _last_logged + 1
    return max(_forwards, 0)
