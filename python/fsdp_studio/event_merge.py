"""A run's one stream, metrics.jsonl, as its owner writes it (native/FORMATS.md, "The run folder and
its owner"): the one writer of that file.

Under the owner (supervise.py), every other writer of the run — the native runtime's rank 0, the
companion in a person's command on each rank — appends its events to a file of its own,
events/<attempt>/runtime.jsonl or rank<N>.jsonl (writer_file). The owner follows those files, whole
lines only (a partial last line waits for its end), and appends each line to metrics.jsonl in the
order it reads them, with its own events (a command's start, the attempt's processes, stop requests,
the end nobody else wrote) in the same sequence: one end per attempt, the first; a later one is
dropped. Files, not pipes: rank 0 is mpirun's or srun's child, on another node under SLURM, and no
descriptor crosses them while the shared run folder does. Its guard, the owner's successor once the
owner is gone, takes up the merge where the owner left it (resume), then writes the end. The
per-writer files are removed once merged at the attempt's end. A write that fails (a full disk)
stops the merge, as it stopped the runtime's own write before: the end then reaches run.json
through the runtime's stderr.

Any Python >= 3.9, standard library only.
"""

import errno
import heapq
import json
import os
import re
import stat
import sys
from typing import Callable, Optional

from fsdp_studio._events import RUN_ATTEMPT_ENV, event_line
from fsdp_studio.run_folder_file import RefusedFile, open_for_writing

#: Set by the run's owner, for every process it starts, to the run folder whose metrics.jsonl it
#: alone writes (native/src/train/run_folder.h kRunOwnerMergesEnv reads the same).
OWNER_MERGES_ENV = "FSDP_RUN_OWNER_MERGES"
#: An attempt's id as a writer accepts it for a path: a file built from it stays in the run folder.
ATTEMPT_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
#: The folder of the per-writer files, one folder per attempt.
EVENTS_DIR = "events"
#: The most read of one writer's file per look; the rest waits for the next one.
READ_CAP = 1 << 20


def stream_path(run_dir):
    """The run's stream: run_dir/metrics.jsonl."""
    return os.path.join(run_dir, "metrics.jsonl")


def attempt_dir(run_dir, attempt):
    """run_dir/events/<attempt>; ValueError when `attempt` is not an id (it would leave the folder)."""
    if not isinstance(attempt, str) or not ATTEMPT_ID.match(attempt):
        raise ValueError(
            f"{RUN_ATTEMPT_ENV} {attempt!r} is not an attempt id (1 to 64 letters, digits, '-' or '_'):"
            f" its events file under {os.path.join(run_dir, EVENTS_DIR)} would not stay inside the run folder"
        )
    return os.path.join(run_dir, EVENTS_DIR, attempt)


def writer_file(run_dir, attempt, name):
    """Where a writer of the run appends its events: run_dir/events/<attempt>/<name> when the run's
    owner merges this folder's events (OWNER_MERGES_ENV names it), else run_dir/metrics.jsonl (no
    owner: the writer is that file's only writer). Raises ValueError for an attempt that is no id."""
    metrics = stream_path(run_dir)
    owner = os.environ.get(OWNER_MERGES_ENV, "")
    try:
        merged_here = bool(owner) and bool(attempt) and os.path.samefile(owner, run_dir)
    except OSError:
        merged_here = False
    if not merged_here:
        return metrics
    folder = attempt_dir(run_dir, attempt)
    for path in (os.path.dirname(folder), folder):
        own_folder(path)
    return os.path.join(folder, name)


def own_folder(path):
    """A folder of the run folder, made when missing; never a link (it would carry events out of it)."""
    try:
        os.mkdir(path, 0o755)
    except FileExistsError:
        pass
    if not stat.S_ISDIR(os.lstat(path).st_mode):
        raise RefusedFile(f"{path} is not a folder of the run folder (a link or a file): no events are written there")


class EventMerge:
    """The owner's writing of metrics.jsonl for one attempt: the per-writer files merged into it, and
    the owner's own events (write). `path` and `write` as _events.EventLog has them."""

    def __init__(self, run_dir, attempt):
        self.run_dir = run_dir
        self.attempt = attempt
        self.folder = attempt_dir(run_dir, attempt)
        self.path = stream_path(run_dir)
        #: Per writer's file name: how far it has been read, and its partial last line.
        self.read_to: dict[str, int] = {}
        self.partial: dict[str, bytes] = {}
        #: This attempt's end is in the stream: a later one is dropped.
        self.ended = False
        #: Why the merge stopped (a full disk), or None.
        self.stopped_by = None
        #: Called with the first run_start a writer wrote: an event of the owner's to follow it at
        #: once (the attempt's processes, which that start names), or None.
        self.after_start: Optional[Callable[[dict], Optional[dict]]] = None
        #: Called with each event once its line is in metrics.jsonl, in the stream's order: what
        #: run.json is a snapshot of (runtime_run.RuntimeRun.take), or None.
        self.appended: Optional[Callable[[dict], None]] = None
        self.fd = None

    def write(self, event, merge_first=True):
        """One of the owner's own events, after every whole line the writers have written so far
        (merge_first=False: after the lines merged at the last look, for an event the owner noted
        before this look's lines)."""
        if merge_first:
            self.merge()
        self.append([event_line(event, self.attempt)])

    def merge(self):
        """Appends the writers' new whole lines to metrics.jsonl, in the order they were written:
        the lines of one look are interleaved by their events' times, each writer's own order kept
        (rank 1's NaN in forward comes before rank 0's NaN in the update it caused, whichever file
        is read first)."""
        batches = []
        for name in self.writers():
            lines: list[bytes] = []
            for _ in range(8):  # a writer faster than this reads waits for the next look
                more = self.read_lines(name)
                if not more:
                    break
                lines.extend(more)
            if lines:
                batches.append(timed(lines))
        if batches:
            self.append([line for _, line in heapq.merge(*batches, key=lambda timed_line: timed_line[0])])

    def writers(self):
        try:
            names = os.listdir(self.folder)
        except OSError:
            return []
        found = [n for n in names if n == "runtime.jsonl" or re.match(r"^rank\d+\.jsonl$", n)]
        return sorted(found, key=lambda n: (n != "runtime.jsonl", len(n), n))

    def read_lines(self, name):
        path = os.path.join(self.folder, name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        except OSError:
            return []
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return []
            data = os.pread(fd, READ_CAP, self.read_to.get(name, 0))
        except OSError:
            return []
        finally:
            os.close(fd)
        self.read_to[name] = self.read_to.get(name, 0) + len(data)
        lines = (self.partial.get(name, b"") + data).split(b"\n")
        self.partial[name] = lines.pop()
        return [line + b"\n" for line in lines if line.strip()]

    def append(self, lines):
        kept = []
        for line in lines:
            if is_run_end(line):
                if self.ended:
                    continue  # one end per attempt: the first
                self.ended = True
            kept.append(line)
            follow = self.after_start
            start = event_of(line) if follow is not None and b'"run_start"' in line else None
            if follow is not None and start is not None and start.get("type") == "run_start":
                self.after_start = None
                event = follow(start)
                if event is not None:
                    kept.append(event_line(event, self.attempt))
        if not kept or self.stopped_by is not None:
            return
        self.append_bytes(b"".join(kept), kept)

    def append_bytes(self, data, lines, after_torn_line=False):
        """`data` written at the stream's end, then each of `lines` (what the data ends) handed on.
        after_torn_line: `data` is the rest of the stream's unterminated last line, not a line of its own."""
        try:
            if self.fd is None:
                self.fd = open_log(self.path, end_last_line=not after_torn_line)
            done = 0
            while done < len(data):
                done += os.write(self.fd, data[done:])
        except OSError as e:
            self.stopped_by = f"{self.path}: cannot write: {e.strerror or e}"
            print(f"fsdp_studio.supervise: the run's events are merged no further: {self.stopped_by}", file=sys.stderr)
            return
        if self.appended is not None:
            for line in lines:
                event = event_of(line)
                if event is not None:
                    self.appended(event)

    def resume(self):
        """The guard's start: where the owner's merge stopped, found in metrics.jsonl itself. Each
        writer's lines reached the stream in its own order, byte for byte, so each writer's file is
        matched, line by line, against the stream from the attempt's start (run.json's log_from);
        its lines not found there are what is left to merge. An end the owner dropped is passed over."""
        readers = {name: LineReader(os.path.join(self.folder, name)) for name in self.writers()}
        stream = LineReader(self.path, attempt_start(self.run_dir))
        for line in iter(stream.next, None):
            if is_run_end(line) and attempt_of(line) in (None, self.attempt):
                self.ended = True
            for reader in readers.values():
                while self.ended and reader.peek() is not None and is_run_end(reader.peek()):
                    reader.next()
                if reader.peek() == line:
                    reader.next()
                    break
        self.complete_torn_line(stream.buffer if stream.at_end else b"", readers)
        for name, reader in readers.items():
            self.read_to[name] = reader.offset

    def complete_torn_line(self, tail, readers):
        """The stream's unterminated last line, `tail`, ended with the rest of the writer's line it
        begins. A write the killed owner was in the middle of stops at a page's end (the kernel
        checks for a fatal signal between pages), so the stream can end in the first bytes of a line
        its writer's file still holds whole. Those bytes stay where they are — a reader has read
        them already — and the rest follows, so that the stream holds the line whole, once. A tail
        no writer's next line begins (the owner's own event, torn) is ended as it is (open_log)."""
        if not tail:
            return
        candidates = [r for r in readers.values() if r.peek() is not None and r.peek().startswith(tail)]
        if not candidates:
            return
        # Several lines may begin so (a tail of a few bytes): the merge wrote the earliest first.
        reader = min(candidates, key=lambda r: timed([r.peek()])[0][0])
        if is_run_end(reader.peek()):
            if self.ended:
                return  # a second end is dropped: its first bytes stay a line that is no event
            self.ended = True
        line = reader.next()
        self.append_bytes(line[len(tail) :], [line], after_torn_line=True)

    def close(self, remove=True):
        """The attempt's end: what is left merged (a partial last line, a writer killed mid-line, is
        not an event), the descriptor closed, and the per-writer files removed — unless the merge
        stopped (a full disk): then they hold the only copy of the events it could not append."""
        self.merge()
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        if remove and self.stopped_by is None:
            remove_attempt_files(self.folder)


def open_log(path, end_last_line=True):
    """metrics.jsonl for appending, never through a link; a last line a killed writer left
    unterminated is ended first (unless end_last_line is False), so the next event is a line of its
    own (as the runtime's MetricsLog)."""
    fd = open_for_writing(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
    size = os.fstat(fd).st_size
    if end_last_line and size > 0 and os.pread(fd, 1, size - 1) != b"\n":
        os.write(fd, b"\n")
    return fd


def remove_attempt_files(folder):
    """events/<attempt>/ and what it holds (its writers' files), then events/ when no attempt is left."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        try:
            os.unlink(os.path.join(folder, name))
        except OSError:
            pass
    for path in (folder, os.path.dirname(folder)):
        try:
            os.rmdir(path)
        except OSError as e:
            if e.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT):
                raise


def timed(lines):
    """(time, line) for one writer's lines, in its order: a line without a time takes the one
    before it, so that it stays where its writer put it."""
    out = []
    last = float("-inf")
    for line in lines:
        event = event_of(line)
        when = event.get("time") if event else None
        if isinstance(when, (int, float)) and not isinstance(when, bool) and when > last:
            last = float(when)
        out.append((last, line))
    return out


def is_run_end(line):
    if b'"run_end"' not in line:
        return False
    try:
        event = json.loads(line)
    except ValueError:
        return False
    return isinstance(event, dict) and event.get("type") == "run_end"


def event_of(line):
    """The event a line holds, or None (a line that is not a JSON object)."""
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def attempt_of(line):
    event = event_of(line)
    return event.get("attempt") if event else None


def attempt_start(run_dir):
    """Where the attempt run.json names began in metrics.jsonl (its log_from), 0 when unknown."""
    from fsdp_studio import run_manifest

    attempt = (run_manifest.read(run_dir) or {}).get("attempt")
    log_from = attempt.get("log_from") if isinstance(attempt, dict) else 0
    return log_from if isinstance(log_from, int) and log_from >= 0 else 0


class LineReader:
    """A file's whole lines from `offset`, one at a time, a chunk of memory at a time."""

    def __init__(self, path, offset=0):
        self.path = path
        self.offset = offset  # where the next line not yet returned begins
        self.buffer = b""
        self.ahead = None
        self.at_end = False

    def peek(self):
        if self.ahead is None:
            self.ahead = self.read_line()
        return self.ahead

    def next(self):
        line = self.peek()
        self.ahead = None
        if line is not None:
            self.offset += len(line)
        return line

    def read_line(self):
        while b"\n" not in self.buffer and not self.at_end:
            chunk = self.read_chunk(self.offset + len(self.buffer))
            if not chunk:
                self.at_end = True
            self.buffer += chunk
        newline = self.buffer.find(b"\n")
        if newline < 0:
            return None  # a partial last line is no line yet
        line, self.buffer = self.buffer[: newline + 1], self.buffer[newline + 1 :]
        return line

    def read_chunk(self, at):
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        except OSError:
            return b""
        try:
            return os.pread(fd, READ_CAP, at) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
        except OSError:
            return b""
        finally:
            os.close(fd)
