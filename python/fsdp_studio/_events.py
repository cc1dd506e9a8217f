"""The metrics protocol as this package writes it (core/schemas/metrics-event.schema.json).

One JSON object per line, each line in one write() on a file opened for appending. Under the run's
owner (supervise.py) each writer appends to a file of its own, events/<attempt>/rank<N>.jsonl,
which the owner alone merges into <run folder>/metrics.jsonl (event_merge.py); started without one
(fsdp_studio.init(run_dir=...) by hand) the companion appends to metrics.jsonl itself, its only
writer. Never through a link, and only to a regular file (run_folder_file.py): a metrics.jsonl
replaced by a link is refused, by name, not written through.
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


def event_line(event, attempt=None):
    """One event as its line in the stream: the protocol's version and the time added, and the
    attempt's id on the events that bound an attempt."""
    line = {"v": PROTOCOL_VERSION, "type": event["type"], "time": time.time()}
    line.update((k, v) for k, v in event.items() if k != "type")
    if attempt and event["type"] in ATTEMPT_BOUNDS:
        line.setdefault("attempt", attempt)
    return (json.dumps(line, allow_nan=False, separators=(",", ":")) + "\n").encode("utf-8")


class EventLog:
    """Appends protocol events to one run folder's stream. `attempt`: the attempt's id its run_start
    and run_end carry (default: $FSDP_RUN_ATTEMPT; none when that is unset too). `own_file`: the name
    of this writer's own file, events/<attempt>/<own_file>, which the run's owner merges, when there
    is an owner that merges this folder (event_merge.writer_file); a callable is asked at the first
    write (a rank is known once the process group is)."""

    def __init__(self, run_dir, attempt=None, own_file=None):
        from .event_merge import stream_path  # it imports this module

        self.run_dir = os.path.abspath(run_dir)
        os.makedirs(self.run_dir, exist_ok=True)
        self.path = stream_path(self.run_dir)
        self.attempt = attempt or os.environ.get(RUN_ATTEMPT_ENV) or None
        self.own_file = own_file
        self.target = None if own_file else self.path

    def write(self, event):
        data = event_line(event, self.attempt)
        if self.target is None:
            from .event_merge import writer_file

            name = self.own_file() if callable(self.own_file) else self.own_file
            self.target = writer_file(self.run_dir, self.attempt, name)
        fd = open_for_writing(self.target, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
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
