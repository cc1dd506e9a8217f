"""Issue 40, items 2 and 3, in the companion: its writers of a run folder (metrics.jsonl through
EventLog, run.json through run_manifest, run.lock's look) never follow a link and reach only regular
files, refusing the rest by name and kind; the supervisor's reader of metrics.jsonl does not block on
a FIFO; and a run.json swapped for a link during a run is replaced by the run's end, not left so.

Run: python3 -m unittest discover -s python/tests (test/runs/python-companion.test.ts runs it).
"""

import json
import os
import subprocess
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from fsdp_studio import run_manifest
from fsdp_studio._events import EventLog
from fsdp_studio.run_folder_file import RefusedFile
from fsdp_studio.run_folder_watch import take_lock

SUPERVISOR = os.path.join(os.path.dirname(__file__), "..", "fsdp_studio", "supervise.py")
SECRET = b"s3cr3t: a file of the person's own, outside the run folder\n"


class RunFolderFiles(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.outside = os.path.join(self.tmp.name, "outside.txt")
        with open(self.outside, "wb") as f:
            f.write(SECRET)
        self.run_dir = os.path.join(self.tmp.name, "run")
        os.makedirs(self.run_dir)

    def tearDown(self):
        self.tmp.cleanup()

    def outside_bytes(self):
        with open(self.outside, "rb") as f:
            return f.read()

    def test_metrics_jsonl_as_a_link_is_refused_by_name_and_the_file_behind_it_untouched(self):
        path = os.path.join(self.run_dir, "metrics.jsonl")
        os.symlink(self.outside, path)
        with self.assertRaises(RefusedFile) as refused:
            EventLog(self.run_dir).write({"type": "log", "level": "info", "msg": "hello"})
        self.assertEqual(str(refused.exception), f"{path} is a symbolic link, not a regular file: not written")
        self.assertEqual(self.outside_bytes(), SECRET)

    def test_create_from_the_command_line_makes_a_regular_file_and_refuses_a_link_by_name(self):
        # As the SLURM launch makes a job's output before slurmstepd opens it following links.
        script = os.path.join(os.path.dirname(__file__), "..", "fsdp_studio", "run_folder_file.py")
        made = os.path.join(self.run_dir, "slurm-7.out")
        ok = subprocess.run([sys.executable, script, "create", made], capture_output=True, text=True)
        self.assertEqual((ok.returncode, ok.stderr), (0, ""))
        self.assertTrue(os.path.isfile(made) and not os.path.islink(made))
        link = os.path.join(self.run_dir, "slurm-8.out")
        os.symlink(self.outside, link)
        refused = subprocess.run([sys.executable, script, "create", link], capture_output=True, text=True)
        self.assertEqual(refused.returncode, 1)
        self.assertEqual(refused.stderr.strip(), f"{link} is a symbolic link, not a regular file: not written")
        self.assertEqual(self.outside_bytes(), SECRET)

    def test_metrics_jsonl_as_a_fifo_is_refused_with_or_without_a_reader(self):
        path = os.path.join(self.run_dir, "metrics.jsonl")
        os.mkfifo(path)
        expected = f"{path} is a FIFO (named pipe), not a regular file: not written"
        reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            with self.assertRaises(RefusedFile) as refused:
                EventLog(self.run_dir).write({"type": "log", "level": "info", "msg": "hello"})
            self.assertEqual(str(refused.exception), expected)
            self.assertEqual(os.read(reader, 100), b"", "something went into the FIFO")
        finally:
            os.close(reader)
        # Without a reader an ordinary open for writing waits for one, for ever.
        outcome = []

        def write():
            try:
                EventLog(self.run_dir).write({"type": "log", "level": "info", "msg": "hello"})
                outcome.append("written")
            except RefusedFile as e:
                outcome.append(str(e))

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        writer.join(60)  # a deadline for a writer that blocks, not a measure of speed
        self.assertEqual(outcome, [expected], "the write blocked on the FIFO")

    def test_run_json_is_not_written_through_a_link_at_its_temporary_name(self):
        tmp = os.path.join(self.run_dir, f"run.json.tmp-{os.getpid()}")
        os.symlink(self.outside, tmp)
        with self.assertRaises(RefusedFile) as refused:
            run_manifest.write(self.run_dir, {"v": 1, "run_id": "r", "status": "running"})
        self.assertEqual(str(refused.exception), f"{tmp} is a symbolic link, not a regular file: not written")
        self.assertEqual(self.outside_bytes(), SECRET)

    def test_a_run_json_swapped_for_a_link_is_replaced_by_the_next_update(self):
        run_manifest.write(self.run_dir, {"v": 1, "run_id": "r", "status": "running"})
        path = run_manifest.manifest_path(self.run_dir)
        os.remove(path)
        os.symlink(self.outside, path)
        doc = run_manifest.update(self.run_dir, {"status": "completed"})
        self.assertIsNotNone(doc)
        self.assertFalse(os.path.islink(path), "run.json is still a link")
        self.assertEqual(run_manifest.read(self.run_dir)["status"], "completed")
        self.assertEqual(self.outside_bytes(), SECRET)

    def test_run_lock_as_a_link_is_refused_in_words(self):
        path = os.path.join(self.run_dir, "run.lock")
        os.symlink(self.outside, path)
        with self.assertRaises(RefusedFile) as refused:
            take_lock(self.run_dir)
        self.assertEqual(str(refused.exception), f"{path} is a symbolic link, not a regular file: not written")

    def test_the_supervisor_reads_a_fifo_metrics_jsonl_as_no_steps_without_blocking(self):
        from fsdp_studio.supervise import last_step

        path = os.path.join(self.run_dir, "metrics.jsonl")
        os.mkfifo(path)
        found = []
        reader = threading.Thread(target=lambda: found.append(last_step(path)), daemon=True)
        reader.start()
        reader.join(60)  # a deadline for a reader that blocks, not a measure of speed
        self.assertEqual(found, [0], "last_step blocked on the FIFO")

    def test_the_supervisor_records_the_end_when_run_json_became_a_link_during_the_run(self):
        path = run_manifest.manifest_path(self.run_dir)
        swap = f"import os; os.remove({path!r}); os.symlink({self.outside!r}, {path!r})"
        starting = {
            "v": 1,
            "run_id": "swapped",
            "name": "swapped",
            "created": 1,
            "status": "starting",
            "config": {},
            "world": {"size": 1},
            "host": "here",
            "target": "local",
        }
        command = [sys.executable, "-c", swap]
        r = subprocess.run(
            [sys.executable, SUPERVISOR, "--run-dir", self.run_dir, "--manifest", json.dumps(starting), "--", *command],
            capture_output=True,
            text=True,
            timeout=120,
        )
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(os.path.islink(path), "run.json is still a link: the run's end was never recorded")
        self.assertEqual(run_manifest.read(self.run_dir)["status"], "completed", r.stderr)
        self.assertEqual(self.outside_bytes(), SECRET)

    def test_the_supervisor_refuses_a_metrics_jsonl_linked_out_of_the_run_folder(self):
        path = os.path.join(self.run_dir, "metrics.jsonl")
        os.symlink(self.outside, path)
        r = subprocess.run(
            [sys.executable, SUPERVISOR, "--run-dir", self.run_dir, "--", sys.executable, "-c", "print('ran')"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(f"{path} is a symbolic link, not a regular file: not written", r.stderr)
        self.assertNotIn("ran", r.stdout)
        self.assertEqual(self.outside_bytes(), SECRET)


if __name__ == "__main__":
    unittest.main()
