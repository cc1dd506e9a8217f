"""frozen.py on real processes: a stopped process is found once it has been stopped for the stated
time (not before, and not once it runs again), named by its program, and a tree is killed whole."""

import contextlib
import io
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from fsdp_studio import frozen


def until(condition, timeout_s=30.0):
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.02)


class FrozenTest(unittest.TestCase):
    def setUp(self):
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()

    def start(self, *argv):
        p = subprocess.Popen(list(argv))
        self.procs.append(p)
        return p

    def test_a_stopped_process_is_frozen_once_stopped_for_the_stated_time(self):
        p = self.start("sleep", "60")
        watch = frozen.FrozenWatch(after_s=0.5)
        self.assertIsNone(watch.look([p.pid]), "a running process is not frozen")
        os.kill(p.pid, signal.SIGSTOP)
        until(lambda: frozen.is_stopped(p.pid))
        self.assertIsNone(watch.look([p.pid]), "just stopped: not frozen yet")
        until(lambda: watch.look([p.pid]) == p.pid)
        # Continued, then stopped again: the time counts from the new stop.
        os.kill(p.pid, signal.SIGCONT)
        until(lambda: not frozen.is_stopped(p.pid))
        self.assertIsNone(watch.look([p.pid]))
        os.kill(p.pid, signal.SIGSTOP)
        until(lambda: frozen.is_stopped(p.pid))
        self.assertIsNone(watch.look([p.pid]))
        self.assertEqual(frozen.name_of(p.pid), "sleep")
        self.assertRegex(
            watch.reason(p.pid),
            rf"^sleep \(pid {p.pid}\) was stopped \(SIGSTOP\) for 0.5 s \(FSDP_STUDIO_FROZEN_AFTER_S\)",
        )

    def test_a_script_is_named_by_its_script_not_its_interpreter(self):
        with tempfile.TemporaryDirectory() as d:
            script = os.path.join(d, "fsdp-tool.py")
            with open(script, "w") as f:
                f.write("import time\ntime.sleep(60)\n")
            p = self.start(sys.executable, script)
            until(lambda: frozen.name_of(p.pid) == "fsdp-tool")
            bare = self.start(sys.executable, "-c", "import time; time.sleep(60)")
            until(lambda: frozen.name_of(bare.pid).startswith("python"))

    def test_kill_tree_kills_what_the_roots_started(self):
        p = self.start("/bin/sh", "-c", "sleep 60 & sleep 60 & wait")
        until(lambda: len(frozen.process_tree([p.pid])) == 3)
        below = [pid for pid in frozen.process_tree([p.pid]) if pid != p.pid]
        killed = frozen.kill_tree([p.pid])
        self.assertEqual(killed[-1], p.pid, "the root last: what it started first")
        p.wait()
        frozen.wait_gone(below)
        self.assertTrue(all(frozen.state_of(pid) in (None, "Z") for pid in below))

    def test_the_timeout_from_the_environment(self):
        self.assertEqual(frozen.frozen_after_s({}), frozen.DEFAULT_FROZEN_AFTER_S)
        self.assertEqual(frozen.frozen_after_s({frozen.FROZEN_AFTER_ENV: "2.5"}), 2.5)
        for bad in ("0", "-3", "soon", "inf", "nan"):
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                self.assertEqual(frozen.frozen_after_s({frozen.FROZEN_AFTER_ENV: bad}), frozen.DEFAULT_FROZEN_AFTER_S)
            self.assertIn("FSDP_STUDIO_FROZEN_AFTER_S", err.getvalue())


if __name__ == "__main__":
    unittest.main()
