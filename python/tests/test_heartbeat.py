"""heartbeat.py on real processes: the guard's wait tells a supervisor that ended the run, one that
died, and one that runs without beating for FSDP_STUDIO_HUNG_AFTER_S (hung) apart; beats keep it
from being taken as hung."""

import os
import subprocess
import sys
import threading
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from fsdp_studio import heartbeat
from fsdp_studio.heartbeat import HUNG_AFTER_ENV, Heartbeat, wait_for_owner


class GuardWaitTest(unittest.TestCase):
    def setUp(self):
        # The owner: a real process that runs (asleep) and never stops.
        self.owner = subprocess.Popen(["sleep", "infinity"])
        self.read_end, self.write_end = os.pipe()

    def tearDown(self):
        self.owner.kill()
        self.owner.wait()
        for fd in (self.read_end, self.write_end):
            try:
                os.close(fd)
            except OSError:
                pass

    def wait(self, hung_after_s="1"):
        with mock.patch.dict(os.environ, {HUNG_AFTER_ENV: hung_after_s}):
            return wait_for_owner(self.read_end, self.owner.pid)

    def test_an_owner_that_stops_beating_is_hung(self):
        beats = Heartbeat(self.write_end)
        beats.beat()
        self.assertEqual(self.wait(), ("hung", 1.0))

    def test_beats_keep_it_alive_until_it_says_the_run_ended(self):
        # The owner beats for 2.5 s of the guard's clock, longer than the 1 s it may go without a beat,
        # in lockstep with the guard: the clock moves 0.1 s only once the guard has looked at it, so a
        # loaded machine that starves either thread cannot make a gap the owner did not make.
        clock = LockstepClock(guard=threading.get_ident())
        beats = Heartbeat(self.write_end)

        def owner_polls():
            for _ in range(25):
                if not clock.tick(0.1):
                    return  # the guard has given its verdict: nothing more to beat for
                beats.beat()
            os.write(self.write_end, b"ended\n")

        polling = threading.Thread(target=owner_polls)
        polling.start()
        with mock.patch.object(heartbeat, "time", clock):
            verdict = self.wait()
        clock.stop()
        polling.join()
        self.assertEqual(verdict, ("ended", None))

    def test_a_pipe_that_ends_without_a_word_is_a_killed_owner(self):
        os.write(self.write_end, b"..")
        os.close(self.write_end)
        self.assertEqual(self.wait(), ("killed", None))


class LockstepClock:
    """heartbeat's `time` for one test: monotonic() is what the owner's ticks made it, and a tick waits
    until the guard's thread has read the clock since the last one (or the guard has returned)."""

    def __init__(self, guard):
        self.guard = guard
        self.now = 0.0
        self.looks = 0
        self.stopped = False
        self.changed = threading.Condition()

    def monotonic(self):
        with self.changed:
            if threading.get_ident() == self.guard:
                self.looks += 1
                self.changed.notify_all()
            return self.now

    def tick(self, seconds):
        """Moves the clock once the guard has looked at it; False once the guard has returned."""
        with self.changed:
            seen = self.looks
            self.changed.wait_for(lambda: self.looks > seen or self.stopped)
            if self.stopped:
                return False
            self.now += seconds
            return True

    def stop(self):
        with self.changed:
            self.stopped = True
            self.changed.notify_all()


if __name__ == "__main__":
    unittest.main()
