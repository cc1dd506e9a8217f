"""Issue 41 item 1: each attempt's run_start and run_end name the attempt (run.json's attempt.id),
whoever writes them, and every process the owner starts is told it (FSDP_RUN_ATTEMPT); a resume in
the same folder is another attempt, with its own id, after the first one's end in the stream.

Run: python3 -m unittest discover -s python/tests (test/runs/python-companion.test.ts runs it).
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

PACKAGE = os.path.join(os.path.dirname(__file__), "..")
sys.path.insert(0, PACKAGE)

from fsdp_studio import run_manifest  # noqa: E402
from fsdp_studio._events import RUN_ATTEMPT_ENV, EventLog  # noqa: E402

SUPERVISOR = os.path.join(PACKAGE, "fsdp_studio", "supervise.py")

# A person's command: logs a step through the companion and prints the attempt it was told.
COMMAND = "import os, fsdp_studio; fsdp_studio.log(1, loss=2.5); print(os.environ['FSDP_RUN_ATTEMPT'])"


def events(run_dir):
    with open(os.path.join(run_dir, "metrics.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


class AttemptEvents(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.run_dir = os.path.join(self.tmp.name, "run")

    def tearDown(self):
        self.tmp.cleanup()

    def attempt(self):
        """One attempt of the command under its owner: (run.json's attempt id, what the command printed)."""
        manifest = json.dumps({"v": 1, "run_id": "run", "status": "starting", "config": {}})
        owner = [sys.executable, SUPERVISOR, "--run-dir", self.run_dir, "--manifest", manifest]
        done = subprocess.run(
            [*owner, "--", sys.executable, "-c", COMMAND],
            capture_output=True,
            text=True,
            timeout=120,
            env={k: v for k, v in os.environ.items() if k != RUN_ATTEMPT_ENV},
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        return run_manifest.read(self.run_dir)["attempt"]["id"], done.stdout.strip()

    def test_start_and_end_of_each_attempt_name_it(self):
        first, told_first = self.attempt()
        second, told_second = self.attempt()
        self.assertNotEqual(first, second)
        self.assertEqual((told_first, told_second), (first, second))
        named = [(e["type"], e.get("attempt")) for e in events(self.run_dir)]
        self.assertEqual(
            named,
            [
                # The owner names the attempt's processes right after its start (issue 41 item 1).
                ("run_start", first),
                ("processes", None),
                ("scalars", None),
                ("run_end", first),
                ("run_start", second),
                ("processes", None),
                ("scalars", None),
                ("run_end", second),
            ],
        )

    def test_a_log_without_an_attempt_writes_none(self):
        log = EventLog(self.run_dir)
        log.attempt = None
        log.write({"type": "run_end", "status": "completed", "step": 0})
        self.assertNotIn("attempt", events(self.run_dir)[0])


if __name__ == "__main__":
    unittest.main()
