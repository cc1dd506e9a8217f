"""Issue 41 item 1: run.json's running, step and end are a snapshot of the run's stream. The owner
takes them from the events its merge appended to metrics.jsonl, in that order, so run.json never
says what the stream has not said first. A runtime's end that is still only in its own file is not
yet the run's end.

Run: python3 -m unittest discover -s python/tests (test/runs/python-companion.test.ts runs it).
"""

import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from fsdp_studio import run_manifest
from fsdp_studio.event_merge import EventMerge, stream_path
from fsdp_studio.runtime_run import RuntimeRun


def line(**event):
    return json.dumps({"v": 1, "time": 1.0, **event}) + "\n"


def stream(run_dir):
    with open(stream_path(run_dir), encoding="utf-8") as f:
        return [json.loads(text) for text in f if text.strip()]


class RunSnapshotTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.run_dir = self.tmp.name
        run_manifest.write(self.run_dir, {"run_id": "r", "status": "starting", "step": 0})
        self.merge = EventMerge(self.run_dir, "a1")
        os.makedirs(self.merge.folder)
        self.runtime_file = os.path.join(self.merge.folder, "runtime.jsonl")
        self.snapshot = RuntimeRun(self.run_dir)
        self.merge.appended = self.snapshot.take

    def tearDown(self):
        self.merge.close(remove=False)
        self.tmp.cleanup()

    def runtime_writes(self, *lines):
        with open(self.runtime_file, "a", encoding="utf-8") as f:
            f.writelines(lines)

    def status(self):
        return (run_manifest.read(self.run_dir) or {}).get("status")

    def test_run_json_says_only_what_the_merge_appended_to_the_stream(self):
        self.runtime_writes(
            line(type="run_start", config={"training": {"max_steps": 4}}, world={"size": 1, "ranks": []}),
            line(type="step", step=3),
            line(type="run_end", status="completed", step=4),
        )
        # The runtime wrote its end, but the stream has not taken it: run.json still says starting.
        self.snapshot.follow()
        self.assertEqual(self.status(), "starting")
        self.assertFalse(os.path.exists(self.merge.path))

        self.merge.merge()
        self.snapshot.follow()
        manifest = run_manifest.read(self.run_dir) or {}
        self.assertEqual((manifest["status"], manifest["step"], manifest["max_steps"]), ("completed", 4, 4))
        self.assertEqual([e["type"] for e in stream(self.run_dir)], ["run_start", "step", "run_end"])

    def test_a_second_end_the_merge_dropped_never_reaches_run_json(self):
        self.runtime_writes(
            line(type="run_start", world={"size": 1, "ranks": []}),
            line(type="run_end", status="stopped", step=2, reason="stopped by SIGTERM"),
        )
        self.merge.merge()
        # A later end (the owner's, here) is dropped from the stream, so run.json keeps the first.
        self.snapshot.end_with(self.merge, {"type": "run_end", "status": "failed", "step": 2, "reason": "late"})
        manifest = run_manifest.read(self.run_dir) or {}
        self.assertEqual((manifest["status"], manifest["end_reason"]), ("stopped", "stopped by SIGTERM"))
        self.assertEqual([e["status"] for e in stream(self.run_dir) if e["type"] == "run_end"], ["stopped"])

    def test_an_end_the_stream_cannot_take_still_reaches_run_json(self):
        self.runtime_writes(line(type="run_start", world={"size": 1, "ranks": []}))
        self.merge.merge()
        self.snapshot.follow()
        self.assertEqual(self.status(), "running")
        # metrics.jsonl replaced by a folder (as a full disk, the merge stops): nothing more is
        # appended, so run.json is not told the step the runtime wrote after.
        os.replace(self.merge.path, self.merge.path + ".old")
        os.mkdir(self.merge.path)
        self.merge.close(remove=False)
        self.runtime_writes(line(type="step", step=5))
        self.merge.merge()
        self.snapshot.follow()
        self.assertIsNotNone(self.merge.stopped_by)
        self.assertEqual((run_manifest.read(self.run_dir) or {}).get("step"), 0)
        # The owner's end: the one thing run.json says that the stream could not take.
        self.snapshot.end_with(self.merge, {"type": "run_end", "status": "failed", "step": 5, "reason": "disk full"})
        manifest = run_manifest.read(self.run_dir) or {}
        self.assertEqual((manifest["status"], manifest["end_reason"]), ("failed", "disk full"))


if __name__ == "__main__":
    unittest.main()
