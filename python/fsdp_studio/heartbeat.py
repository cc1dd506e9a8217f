"""A supervisor that runs but no longer polls: blocked, not stopped (native/FORMATS.md, "Nothing
frozen is waited on"). One real way: its stderr is a pipe its launcher stopped reading (a terminal's
`fsdp-train … | less` left unread), a rank's output has filled it, and the supervisor writes a line
of its own there — the one naming a frozen process, before it kills it — and waits for room that
never comes. It is not stopped (frozen.py sees nothing), and nothing of the run ends.

So the supervisor beats on the pipe to its guard (supervise.py start_guard) as it polls, and the
guard, which watches that pipe for its end anyway, takes a supervisor that has not beaten for
FSDP_STUDIO_HUNG_AFTER_S seconds (default 60) while running or asleep as hung: it kills every
process of the run and writes the end, naming the supervisor by pid. A supervisor stopped by a
signal is frozen.py's (named as stopped); one a debugger holds (state 't') is a person's, never hung.

Any Python >= 3.9, standard library only.
"""

import os
import select
import sys
import time

from fsdp_studio.frozen import FrozenWatch, seconds_setting, state_of

#: The environment variable that sets how long a supervisor may go without polling, in seconds.
HUNG_AFTER_ENV = "FSDP_STUDIO_HUNG_AFTER_S"
DEFAULT_HUNG_AFTER_S = 60.0
#: What the supervisor writes to its guard as it polls, at most once per BEAT_EVERY_S.
BEAT = b"."
BEAT_EVERY_S = 0.5
#: A gap in the guard's own looking (it looks every 0.2 s) longer than this restarts the count.
LOOK_GAP_S = 5.0


class Heartbeat:
    """The supervisor's side: a beat on the guard's pipe (`fd`, the write end; None without a guard)."""

    def __init__(self, fd):
        self.fd = fd
        self.next_at = 0.0
        if fd is not None:
            # A guard that does not read (stopped) fills the pipe: a beat is then dropped, never waited on.
            os.set_blocking(fd, False)

    def beat(self):
        now = time.monotonic()
        if self.fd is None or now < self.next_at:
            return
        self.next_at = now + BEAT_EVERY_S
        try:
            os.write(self.fd, BEAT)
        except OSError:
            pass  # a full pipe (the guard is stopped: it is not this process's to judge), or gone


def wait_for_owner(fd, owner):
    """The guard's wait (supervise.py guard_main) on the pipe `fd` from the supervisor `owner`:
    ("ended", None) when it said the run ended; ("killed", None) when the pipe ends without that;
    ("stopped", watch) once it has been stopped for FSDP_STUDIO_FROZEN_AFTER_S; ("hung", seconds)
    once it has run without a beat for FSDP_STUDIO_HUNG_AFTER_S."""
    frozen = FrozenWatch()
    hung_after_s = seconds_setting(HUNG_AFTER_ENV, DEFAULT_HUNG_AFTER_S)
    last_beat = last_look = time.monotonic()
    said = b""
    while True:
        readable, _, _ = select.select([fd], [], [], 0.2)
        now = time.monotonic()
        if now - last_look > LOOK_GAP_S:
            # The guard itself did not look (stopped with the whole job by a SLURM suspend, or starved):
            # that silence is not the supervisor's, which gets the whole time again.
            last_beat = now
        last_look = now
        if readable:
            more = os.read(fd, 4096)
            if not more:
                return "killed", None
            said = (said + more).replace(BEAT, b"")
            if said.startswith(b"ended"):
                return "ended", None
            last_beat = now
        if frozen.look([owner]) is not None:
            return "stopped", frozen
        if now - last_beat >= hung_after_s and state_of(owner) in ("R", "S", "D"):
            return "hung", hung_after_s


def hung_reason(owner, after_s):
    """The run's end for a supervisor that ran without polling, naming it and the setting."""
    return (
        f"its supervisor (pid {owner}) ran but did not poll for {after_s:g} s ({HUNG_AFTER_ENV}): blocked"
        " (writing to an output nobody reads, or waiting on a file system); every process of the run was killed"
    )


def say(text):
    """A line on stderr that never blocks: written only when the pipe or terminal has room for it
    (a guard whose launcher stopped reading still ends the run and lets the lock go)."""
    data = (text + "\n").encode("utf-8", "replace")[:4096]
    try:
        _, writable, _ = select.select([], [sys.stderr.fileno()], [], 0)
        if writable:
            os.write(sys.stderr.fileno(), data)
    except (OSError, ValueError):
        pass
