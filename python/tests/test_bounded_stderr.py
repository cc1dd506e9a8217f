"""Issue 40, item 4, in the supervisor: a command's stderr is copied a chunk at a time with a line cap,
so one enormous line costs the supervisor a bounded amount of memory (a 200 MB line took it to 441 MB
when it read whole lines), while stderr.log still gets every byte and short lines keep their meaning.

Run: python3 -m unittest discover -s python/tests (test/runs/python-companion.test.ts runs it).
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

SUPERVISOR = os.path.join(os.path.dirname(__file__), "..", "fsdp_studio", "supervise.py")

#: The line printed on stderr, written by the command 1 MiB at a time so that the command itself stays small.
LINE_BYTES = 128 * 1024 * 1024
#: The supervisor's peak resident memory allowed: its own start-up (about 20 MB) and a few chunks.
RSS_BOUND_BYTES = 64 * 1024 * 1024

FLOOD = f"""
import sys
piece = b"x" * (1 << 20)
for _ in range({LINE_BYTES} >> 20):
    sys.stderr.buffer.write(piece)
sys.stderr.buffer.write(b"\\n")
sys.stderr.buffer.write(b"the last words\\n")
"""

# Runs the supervisor and reports the largest resident set of the processes it waited for: the
# supervisor and the guard it starts (the command is the supervisor's child, its peak also counted,
# and kept small by writing its line in pieces).
MEASURE = """
import json, resource, subprocess, sys
with open(sys.argv[1], "wb") as err:
    code = subprocess.call(sys.argv[2:], stderr=err, stdout=subprocess.DEVNULL)
print(json.dumps({"code": code, "max_rss_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


class BoundedStderr(unittest.TestCase):
    def test_a_huge_stderr_line_is_copied_whole_in_bounded_memory(self):
        with tempfile.TemporaryDirectory() as tmp:
            run_dir = os.path.join(tmp, "run")
            err_log = os.path.join(tmp, "stderr.log")
            argv = [sys.executable, SUPERVISOR, "--run-dir", run_dir, "--", sys.executable, "-c", FLOOD]
            r = subprocess.run(
                [sys.executable, "-c", MEASURE, err_log, *argv], capture_output=True, text=True, timeout=600
            )
            self.assertEqual(r.returncode, 0, r.stderr)
            measured = json.loads(r.stdout)
            self.assertEqual(measured["code"], 0)
            peak = measured["max_rss_kib"] * 1024
            self.assertLess(
                peak, RSS_BOUND_BYTES, f"peak resident set {peak >> 20} MiB for a {LINE_BYTES >> 20} MiB line"
            )
            # Every byte reached stderr.log, the long line and the short one after it.
            size = os.path.getsize(err_log)
            self.assertGreaterEqual(size, LINE_BYTES + len("\nthe last words\n"))
            with open(err_log, "rb") as f:
                f.seek(LINE_BYTES - 4)
                self.assertEqual(f.read(20), b"xxxx\nthe last words\n")

    def test_lines_split_across_chunks_keep_their_meaning(self):
        # A failure's last words after a long line still name the failure.
        with tempfile.TemporaryDirectory() as tmp:
            run_dir = os.path.join(tmp, "run")
            fail = "import sys; sys.stderr.write('y' * 200000 + '\\n' + 'ValueError: the real reason\\n'); sys.exit(3)"
            r = subprocess.run(
                [sys.executable, SUPERVISOR, "--run-dir", run_dir, "--", sys.executable, "-c", fail],
                capture_output=True,
                timeout=120,
            )
            self.assertEqual(r.returncode, 3)
            with open(os.path.join(run_dir, "metrics.jsonl"), encoding="utf-8") as f:
                ends = [e for e in map(json.loads, f) if e.get("type") == "run_end"]
            self.assertEqual(len(ends), 1)
            self.assertIn("ValueError: the real reason", ends[0].get("reason", ""), ends)


if __name__ == "__main__":
    unittest.main()
