"""What the supervisor reads of a run folder while the native runtime writes it: the runtime's
events in metrics.jsonl, followed from where this launch began, and run.lock, held for the attempt.

The native runtime writes only its events (metrics.jsonl) and holds the lock; the supervisor that
owns the run turns run_start, step and run_end into run.json (run_manifest.py). Reads follow the
rules of every reader of a run folder (core/protocol/regular-file.ts): regular files only, opened
without blocking, a bounded amount per look.
"""

import fcntl
import json
import os
import socket
import stat
import time

from fsdp_studio.run_folder_file import RefusedFile, open_for_writing

#: The most read from metrics.jsonl per look; the rest waits for the next one.
READ_CAP = 1 << 20


def file_size(path):
    """The size of a regular file; 0 when absent or not a regular file."""
    try:
        st = os.stat(path)
    except OSError:
        return 0
    return st.st_size if stat.S_ISREG(st.st_mode) else 0


class EventFollower:
    """The events appended to a metrics.jsonl after `offset`, whole lines only."""

    def __init__(self, path, offset):
        self.path = path
        self.offset = offset
        self.partial = b""

    def read_new(self):
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            return []
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return []
            data = os.pread(fd, READ_CAP, self.offset)
        except OSError:
            return []
        finally:
            os.close(fd)
        self.offset += len(data)
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()
        events = []
        for line in lines:
            try:
                e = json.loads(line.decode("utf-8"))
            except ValueError:
                continue  # a line cut short or not JSON is passed over, as every reader does
            if isinstance(e, dict):
                events.append(e)
        return events


def take_lock(run_dir):
    """Takes run_dir/run.lock for this process, the run's owner, for as long as the descriptor it
    returns stays open: (fd, None), or (None, "pid N on host H") when another process holds it. The
    trainer this process starts finds this pid in the file and runs under the lock
    (native/src/run_folder/run_folder_lock.h, FSDP_RUN_LOCK_OWNER), so the folder stays taken until
    every process of the attempt is gone, not only until the trainer is. Raises RefusedFile when
    run.lock is not a regular file (a link, a FIFO), naming it."""
    path = os.path.join(run_dir, "run.lock")
    try:
        fd = open_for_writing(path, os.O_RDWR | os.O_CREAT)
    except RefusedFile:
        raise
    except OSError as e:
        return None, f"{path} cannot be opened ({e.strerror})"
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        words = os.pread(fd, 512, 0).decode("utf-8", "replace").split()
        os.close(fd)
        if words and words[0].isdigit():
            return None, f"pid {words[0]} on host {words[1] if len(words) > 1 else '?'}"
        return None, "another process (it left no name in the lock file)"
    # The holder's line as the runtime writes its own ("pid host unix-time"): a refusal names it.
    line = f"{os.getpid()} {socket.gethostname()} {int(time.time())}\n".encode()
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, line, 0)
    except OSError:
        pass  # the lock is the flock; the line only names its holder (a full disk)
    return fd, None
