"""The metrics protocol as this package writes it (core/schemas/metrics-event.schema.json).

One JSON object per line, appended to <run folder>/metrics.jsonl, each line in one write() on a
file opened for appending, so lines from several processes (the supervisor, rank 0's scalars,
any rank's anomaly) never interleave within a line. Never through a link, and only to a regular
file (run_folder_file.py): a metrics.jsonl replaced by a link is refused, by name, not written through.
"""

import json
import math
import os
import time

from .run_folder_file import open_for_writing

PROTOCOL_VERSION = 1
RUN_DIR_ENV = "FSDP_STUDIO_RUN_DIR"
#: The attempt at the run a process belongs to, as the run's owner (supervise.py) names it for every
#: process it starts: the native runtime and a person's command, with this package in it.
RUN_ATTEMPT_ENV = "FSDP_RUN_ATTEMPT"
#: The events that bound an attempt in the stream: each carries the attempt's id (`attempt`), so a
#: reader tells whose start or end a line is by the line itself, not by its time.
ATTEMPT_BOUNDS = ("run_start", "run_end")


def finite_or_none(x):
    """A number for the protocol: None (null) when it is not finite."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


class EventLog:
    """Appends protocol events to one run folder's metrics.jsonl. `attempt`: the attempt's id its
    run_start and run_end carry (default: $FSDP_RUN_ATTEMPT; none when that is unset too)."""

    def __init__(self, run_dir, attempt=None):
        self.run_dir = os.path.abspath(run_dir)
        os.makedirs(self.run_dir, exist_ok=True)
        self.path = os.path.join(self.run_dir, "metrics.jsonl")
        self.attempt = attempt or os.environ.get(RUN_ATTEMPT_ENV) or None

    def write(self, event):
        line = {"v": PROTOCOL_VERSION, "type": event["type"], "time": time.time()}
        line.update((k, v) for k, v in event.items() if k != "type")
        if self.attempt and event["type"] in ATTEMPT_BOUNDS:
            line.setdefault("attempt", self.attempt)
        data = (json.dumps(line, allow_nan=False, separators=(",", ":")) + "\n").encode("utf-8")
        fd = open_for_writing(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            done = 0
            while done < len(data):
                done += os.write(fd, data[done:])
        finally:
            os.close(fd)


def rank():
    """This process's rank: the launcher's RANK, else torch.distributed's, else MPI's, else 0."""
    for name in ("RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"):
        value = os.environ.get(name)
        if value is not None and value.isdigit():
            return int(value)
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return dist.get_rank()
    except ImportError:
        pass
    return 0
