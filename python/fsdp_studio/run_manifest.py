"""The one writer of a run's manifest, <run folder>/run.json (core/schemas/run-manifest.schema.json).

Every write of run.json, for every kind of run, goes through this module: the supervisor that owns
the run (supervise.py) keeps it current for the run's whole life, and the few writes no owner can
make — a SLURM run queued before its job starts, a job sbatch refused, a job's end as SLURM
reported it after the job is gone — call it from the command line on the host of the run folder:

    python3 -m fsdp_studio.run_manifest write DIR        # the manifest (JSON) on standard input
    python3 -m fsdp_studio.run_manifest mark-failed DIR REASON

Reads are as every reader of a run folder reads (core/protocol/regular-file.ts): a regular file
only, opened without blocking, within the size a manifest may have. Writes are atomic (a temporary
file renamed over run.json), except on a full disk, where run.json is rewritten in place: the
blocks it frees when truncated hold its new text, so a run's end is still recorded. No write goes
through a link (run_folder_file.py): a run.json replaced by one is replaced in its turn. Any Python
>= 3.9, standard library only.
"""

import errno
import json
import os
import stat
import sys
import time
from typing import Optional

if not __package__:  # run as a script (python3 .../fsdp_studio/run_manifest.py): its package is beside it
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fsdp_studio.run_folder_file import open_for_writing

#: The most a run.json may hold (MANIFEST_MAX_BYTES in core/protocol/regular-file.ts).
MAX_MANIFEST_BYTES = 32 * 1024 * 1024

#: Statuses of a run that has not ended.
LIVE = ("starting", "running")

#: The manifest this process last wrote, by run folder: what an update starts from when run.json was
#: replaced by something that is not a regular file (a link to a file of the person's, a FIFO), so
#: the run's end is still recorded and the link replaced, neither followed nor read.
_written: dict = {}


def manifest_path(run_dir):
    return os.path.join(run_dir, "run.json")


def read_bytes(run_dir):
    """run.json's bytes as every reader reads them; None when absent or refused (not a regular
    file, or larger than a manifest may be)."""
    fd: Optional[int]  # None once the file object owns it
    try:
        fd = os.open(manifest_path(run_dir), os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_MANIFEST_BYTES:
            return None
        with os.fdopen(fd, "rb") as f:
            fd = None
            return f.read(MAX_MANIFEST_BYTES)
    except OSError:
        return None
    finally:
        if fd is not None:
            os.close(fd)


def read(run_dir):
    """run.json as a dict; None when absent, refused or not a JSON object."""
    data = read_bytes(run_dir)
    if data is None:
        return None
    try:
        doc = json.loads(data.decode("utf-8"))
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def text_of(doc):
    return json.dumps(doc, indent=2) + "\n"


def write_bytes(run_dir, data):
    """Replaces run.json with data, atomically; in place when the disk has no room for a copy."""
    path = manifest_path(run_dir)
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        # The temporary name is not written through a link planted there; the rename replaces one at run.json.
        with os.fdopen(open_for_writing(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if e.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        # Not a link or a FIFO planted in the folder: only a regular run.json is rewritten.
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise
            os.ftruncate(fd, 0)
            done = 0
            while done < len(data):
                done += os.pwrite(fd, data[done:], done)
        finally:
            os.close(fd)


def write(run_dir, doc):
    """Writes doc as run.json, stamped with the time of the write."""
    doc["updated"] = time.time()
    write_bytes(run_dir, text_of(doc).encode("utf-8"))
    _written[os.path.abspath(run_dir)] = dict(doc)


def current(run_dir):
    """run.json as a dict to update: as read, or, when something that is not a regular file took its
    place, what this process last wrote there; None when neither."""
    try:
        mode = os.lstat(manifest_path(run_dir)).st_mode
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        last = _written.get(os.path.abspath(run_dir))
        return dict(last) if last is not None else None
    return read(run_dir)


def update(run_dir, fields):
    """Merges fields into run.json and writes it; a live status drops the last end's reason. Does
    nothing without a run.json: the one who starts a run writes it first."""
    doc = current(run_dir)
    if doc is None:
        return None
    doc.update(fields)
    if fields.get("status") in LIVE:
        doc.pop("end_reason", None)
    write(run_dir, doc)
    return doc


def mark_failed(run_dir, reason):
    """Marks a run that has not ended failed, with the reason; an ended run keeps its end."""
    doc = current(run_dir)
    if doc is None or doc.get("status") not in LIVE:
        return False
    doc.update(status="failed", end_reason=reason)
    write(run_dir, doc)
    return True


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    usage = "usage: python3 -m fsdp_studio.run_manifest write DIR < MANIFEST | mark-failed DIR REASON"
    if len(argv) == 2 and argv[0] == "write":
        try:
            doc = json.loads(sys.stdin.buffer.read(MAX_MANIFEST_BYTES + 1).decode("utf-8"))
        except ValueError as e:
            print(f"fsdp_studio.run_manifest: the manifest on standard input is not JSON: {e}", file=sys.stderr)
            return 2
        if not isinstance(doc, dict):
            print("fsdp_studio.run_manifest: the manifest on standard input is not a JSON object", file=sys.stderr)
            return 2
        os.makedirs(argv[1], exist_ok=True)
        write(argv[1], doc)
        return 0
    if len(argv) == 3 and argv[0] == "mark-failed":
        mark_failed(argv[1], argv[2])
        return 0
    print(usage, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
