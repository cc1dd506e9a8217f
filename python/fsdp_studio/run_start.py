"""What the supervisor writes as a run starts: the starting manifest the launcher composed, with
this process's own facts — its pid first, and when it leads the run's process group, that group and
when its leader started (what Stop checks before it signals the group: runs/stop/run-group.ts)."""

import json
import os
import sys
import uuid

from fsdp_studio import run_manifest
from fsdp_studio.run_processes import stat_of

#: The starting manifest's environment variable: what the launcher knows of the run (its id, name,
#: config, world, host, target, command…), as runs/folder/run-folder.ts startingManifest composes it.
MANIFEST_ENV = "FSDP_RUN_MANIFEST"
#: The run's mark (runs/stop/run-group.ts): every process of a run the editor can stop carries it.
RUN_MARK_ENV = "FSDP_RUN_ID"


def starting_manifest(args):
    """The manifest this launch starts the run with (--manifest, else FSDP_RUN_MANIFEST, which the
    run's processes do not inherit); None when the run folder's run.json is to be kept as it is (a
    SLURM job, whose run.json the login host wrote when it queued it); False when unreadable."""
    text = os.environ.pop(MANIFEST_ENV, None) if args.manifest is None else args.manifest
    if text is None:
        return None
    try:
        doc = json.loads(text)
    except ValueError as e:
        print(f"fsdp_studio.supervise: the starting manifest is not JSON: {e}", file=sys.stderr)
        return False
    if not isinstance(doc, dict):
        print("fsdp_studio.supervise: the starting manifest is not a JSON object", file=sys.stderr)
        return False
    return doc


def new_attempt(log_from):
    """This attempt at the run, as run.json names it (core/schemas/run-manifest.schema.json
    attempt): an id of its own, and where its events begin in metrics.jsonl (`log_from`, the file's
    size when this owner took the folder), which orders it among the run's attempts by the stream
    itself, not by clocks or pids."""
    return {"id": uuid.uuid4().hex[:16], "log_from": log_from}


def write_starting(run_dir, doc, attempt):
    """run.json as the run starts: the launcher's manifest, this attempt, this process as the run's
    first pid, and when this process leads the run's own process group (the editor's detached start,
    fsdp-train's new group), that group and when its leader started — what Stop checks before it
    signals it."""
    doc = dict(doc, status="starting", pids=[os.getpid()], attempt=attempt)
    for key in ("end_reason", "pgid", "leader_start", "boot_id"):
        doc.pop(key, None)
    if leads_run_group() and os.environ.get(RUN_MARK_ENV):
        doc["pgid"] = os.getpid()
        doc["leader_start"] = own_start_ticks()
        boot = boot_id()
        if boot:
            doc["boot_id"] = boot
    run_manifest.write(run_dir, doc)


def leads_run_group():
    return os.getpgrp() == os.getpid()


def own_start_ticks():
    """When this process started, in clock ticks since boot (field 22 of /proc/self/stat); 0 when unknown."""
    stat = stat_of("self")
    return stat[1] if stat else 0


def boot_id():
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""
