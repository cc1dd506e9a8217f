"""Opening a file of a run folder, as every program of FSDP Studio does (core/protocol/regular-file.ts,
native/src/runtime/files.h): a run folder is written by programs and people we do not control.

Writes never follow a symbolic link — one put in the folder in place of metrics.jsonl or run.json
would carry the run's events to a file outside it — never block on a FIFO, and reach only a regular
file. Reads open without blocking and read only a regular file. A refusal names the file and what it
is instead, never what it holds. Any Python >= 3.9, standard library only.

From the command line, for a file another program opens by name (slurmstepd opens a SLURM job's
output following links): `python3 run_folder_file.py create PATH` makes PATH a regular file, never
through a link, or says what it is instead (exit 1).
"""

import errno
import os
import stat
import sys


class RefusedFile(OSError):
    """A file of a run folder that is not a regular file, by name and kind: not written (or not read)."""


def kind_of(mode):
    """What a file that is not a regular file is, in words."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device (such as /dev/zero)"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def refused(path, mode, done="not written"):
    return RefusedFile(f"{path} is {kind_of(mode)}, not a regular file: {done}")


def check_regular(path):
    """Raises RefusedFile when `path` exists and is not a regular file (a link is not followed)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise refused(path, mode)


def open_for_writing(path, flags, mode=0o644):
    """A descriptor of the regular file `path`, opened with `flags` (os.O_WRONLY or os.O_RDWR, with
    O_APPEND, O_CREAT, O_TRUNC as the writer needs) and never through a link; RefusedFile otherwise."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as e:
        # ELOOP: the name is a link; ENXIO: a FIFO nobody reads; EISDIR: a folder. lstat says which.
        if e.errno not in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
            raise
        try:
            st = os.lstat(path)
        except OSError:
            raise e from None
        if stat.S_ISREG(st.st_mode):
            raise
        raise refused(path, st.st_mode) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise refused(path, st.st_mode)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_tail(path, limit):
    """The last `limit` bytes of the regular file `path`; b"" when it is absent or not a regular file
    (a FIFO would block the reader for ever, /dev/zero never end)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return b""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return b""
        start = max(0, st.st_size - limit)
        return os.pread(fd, st.st_size - start, start)
    except OSError:
        return b""
    finally:
        os.close(fd)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] != "create":
        print("usage: python3 run_folder_file.py create PATH", file=sys.stderr)
        return 2
    try:
        os.close(open_for_writing(argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND))
    except OSError as e:
        print(f"{e}" if isinstance(e, RefusedFile) else f"{argv[1]}: {e.strerror}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
