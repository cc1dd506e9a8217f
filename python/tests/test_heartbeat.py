"""heartbeat.py on real processes: the guard's wait tells a supervisor that ended the run, one that
died, and one that runs without beating for FSDP_STUDIO_HUNG_AFTER_S (hung) apart; beats keep it
from being taken as hung."""

import os
import subprocess
import sys
import threading
import time
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from fsdp_studio.heartbeat import HUNG_AFTER_ENV, Heartbeat, wait_for_owner


class GuardWaitTest(unittest.TestCase):
    def setUp(self):
        # The owner: a real process that runs (asleep) and never stops.
        self.owner = subprocess.Popen(["sleep", "600"])
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
        beats = Heartbeat(self.write_end)

        def owner_polls():
            deadline = time.monotonic() + 2.5  # longer than the 1 s it may go without a beat
            while time.monotonic() < deadline:
                beats.beat()
                time.sleep(0.1)
            os.write(self.write_end, b"ended\n")

        polling = threading.Thread(target=owner_polls)
        polling.start()
        self.assertEqual(self.wait(), ("ended", None))
        polling.join()

    def test_a_pipe_that_ends_without_a_word_is_a_killed_owner(self):
        os.write(self.write_end, b"..")
        os.close(self.write_end)
        self.assertEqual(self.wait(), ("killed", None))


if __name__ == "__main__":
    unittest.main()
