"""Issue 41: a new attempt on a run folder whose last attempt has ended waits for that attempt's
owner to let the folder's lock go (it writes the end first and exits a moment later), so Resume or
Continue pressed at the end is not refused; a folder whose attempt is live is refused at once.

Run: python3 -m unittest discover -s python/tests (test/runs/python-companion.test.ts runs it).
"""

import os
import subprocess
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from fsdp_studio import run_manifest
from fsdp_studio.supervise import take_lock_after_the_last_end

# A holder of run.lock that lets it go when its stdin closes: the last attempt's owner, exiting.
HOLDER = """
import sys
from fsdp_studio.run_folder_watch import take_lock
lock, holder = take_lock(sys.argv[1])
assert lock is not None, holder
print("held", flush=True)
sys.stdin.read()
"""


class LockAfterTheLastEnd(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.run_dir = self.tmp.name
        package = os.path.join(os.path.dirname(__file__), "..")
        self.holder = subprocess.Popen(
            [sys.executable, "-c", HOLDER, self.run_dir],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": package},
        )
        assert self.holder.stdin is not None and self.holder.stdout is not None
        self.holder_in, self.holder_out = self.holder.stdin, self.holder.stdout
        self.assertEqual(self.holder_out.readline(), b"held\n")

    def tearDown(self):
        self.holder_in.close()
        self.holder.wait()
        self.holder_out.close()
        self.tmp.cleanup()

    def write_status(self, status):
        run_manifest.write(self.run_dir, {"v": 1, "run_id": "r", "status": status, "config": {}})

    def test_waits_for_an_ended_attempts_owner_to_exit(self):
        self.write_status("completed")
        taken = []
        waiter = threading.Thread(target=lambda: taken.append(take_lock_after_the_last_end(self.run_dir)))
        waiter.start()
        # The waiter is refused until the owner exits: it has not returned while the lock is held.
        waiter.join(0.5)
        self.assertTrue(waiter.is_alive(), f"took or gave up while the ended owner held the lock: {taken}")
        self.holder_in.close()
        waiter.join(30)
        self.assertFalse(waiter.is_alive())
        lock, holder = taken[0]
        self.assertIsNone(holder)
        self.assertIsNotNone(lock)
        os.close(lock)

    def test_refuses_a_live_attempts_folder_at_once(self):
        self.write_status("running")
        lock, holder = take_lock_after_the_last_end(self.run_dir)
        self.assertIsNone(lock)
        self.assertIn(f"pid {self.holder.pid}", holder)


if __name__ == "__main__":
    unittest.main()
