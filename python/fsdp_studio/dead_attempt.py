"""The last attempt at a run whose owner and guard were both killed (native/FORMATS.md, "The run
folder and its owner"): nobody merged what its writers left in events/<attempt>/, and nobody wrote
its end. The next owner of the folder — holding the folder's lock, before anything of its own
attempt is written — takes it up as the guard would have: it kills what is left of that attempt on
this host (the lock is let go when the owner and the guard die, but the ranks and their launchers
live on, writing), merges the rest of its writers' files into metrics.jsonl, writes its one end
(stand_in, naming its owner and guard by pid) when the stream has none, and removes the files.

Any Python >= 3.9, standard library only.
"""

import os
import stat
import sys
from typing import Optional

from fsdp_studio import run_manifest
from fsdp_studio.attempt_processes import kill_attempt, processes_of
from fsdp_studio.event_merge import ATTEMPT_ID, EventMerge, attempt_dir
from fsdp_studio.frozen import name_of, wait_gone
from fsdp_studio.run_folder_watch import EventFollower
from fsdp_studio.runtime_run import RuntimeRun


def take_up(run_dir) -> Optional[str]:
    """Ends the attempt run.json names when it was left without an end or with unmerged files (only
    for the holder of the folder's lock: that attempt's owner and guard are gone). Returns the end
    written (its reason), or None when there was nothing to take up."""
    manifest = run_manifest.read(run_dir) or {}
    attempt = manifest.get("attempt")
    attempt_id = attempt.get("id") if isinstance(attempt, dict) else None
    if not isinstance(attempt_id, str) or not ATTEMPT_ID.match(attempt_id):
        return None
    if manifest.get("status") not in run_manifest.LIVE and not is_folder(attempt_dir(run_dir, attempt_id)):
        return None
    killed = kill_left(run_dir, attempt_id)
    log = EventMerge(run_dir, attempt_id)
    log.resume()
    merge_all(log)
    reason = None if log.ended else write_end(log, manifest, killed)
    log.close()
    return reason


def write_end(log, manifest, killed):
    """The attempt's one end, a stand-in: failed, naming its owner and guard, when run.json still
    says it lives; else the end its owner wrote into run.json (its merge had stopped: a full disk)."""
    from fsdp_studio.supervise import last_step  # it imports this module

    live = manifest.get("status") in run_manifest.LIVE
    reason = dead_reason(log.run_dir, manifest, log.attempt, killed) if live else manifest.get("end_reason")
    status = "failed" if live else manifest.get("status", "failed")
    end = {"type": "run_end", "status": status, "step": last_step(log.path), "stand_in": True}
    end.update({"reason": reason} if reason else {})
    if live:
        # As every end an owner writes: the stream first, then run.json from what the stream took.
        RuntimeRun(log.run_dir).end_with(log, end)
    else:
        log.write(end)  # run.json has said this end already
    print(
        f"fsdp_studio.supervise: the last attempt ({log.attempt}) had no end in the stream: {reason}", file=sys.stderr
    )
    return reason


def is_folder(path):
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def merge_all(log):
    """Every whole line the writers left (the merge reads a bounded amount per look)."""
    while True:
        read = sum(log.read_to.values())
        log.merge()
        if sum(log.read_to.values()) == read or log.stopped_by is not None:
            return


def kill_left(run_dir, attempt_id):
    """Every process of the attempt still running on this host killed, the ranks before their
    launchers, and waited for: none writes after its files are merged. Returns what was killed, as
    (pid, name) pairs."""
    found = processes_of(run_dir, attempt_id)
    named = {pid: name_of(pid) for pid in found}
    killed = kill_attempt(run_dir, attempt_id, found=found)
    wait_gone(killed)
    return [(pid, named[pid]) for pid in killed if pid in named]


def dead_reason(run_dir, manifest, attempt_id, killed):
    """The end of an attempt whose owner and guard were killed, in a person's words, by pid."""
    owner, guard = owner_and_guard(run_dir, manifest, attempt_id)
    who = f"its supervisor{f' (pid {owner})' if owner else ''} and its guard{f' (pid {guard})' if guard else ''}"
    reason = f"{who} were killed: neither wrote the attempt's end (the next attempt at the run found it so"
    if killed:
        left = ", ".join(f"{name} (pid {pid})" for pid, name in killed)
        reason += f" and killed what of it still ran: {left}"
    return reason + ")"


def owner_and_guard(run_dir, manifest, attempt_id):
    """The attempt's owner and guard pids, as its `processes` event in the stream names them (the
    owner from run.json's pids when that event was never written)."""
    attempt = manifest.get("attempt") or {}
    log_from = attempt.get("log_from") if isinstance(attempt.get("log_from"), int) else 0
    events = EventFollower(os.path.join(run_dir, "metrics.jsonl"), log_from)
    owner = guard = None
    batch = events.read_new()
    while batch:
        for e in batch:
            if e.get("type") == "processes" and isinstance(e.get("processes"), list):
                for p in e["processes"]:
                    if isinstance(p, dict) and p.get("role") == "owner":
                        owner = p.get("pid")
                    if isinstance(p, dict) and p.get("role") == "guard":
                        guard = p.get("pid")
        batch = events.read_new()
    pids = manifest.get("pids")
    if owner is None and isinstance(pids, list) and pids and isinstance(pids[0], int):
        owner = pids[0]
    return owner, guard
