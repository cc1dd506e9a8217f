"""dead_attempt.py: the next owner of a run folder takes up the last attempt whose owner and guard
were killed — what of it still runs killed, its writers' lines merged, its one end written."""

import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from fsdp_studio import run_manifest
from fsdp_studio.attempt_processes import Found, processes_of, ranks_first
from fsdp_studio.dead_attempt import take_up
from fsdp_studio.event_merge import OWNER_MERGES_ENV, stream_path
from fsdp_studio.frozen import state_of
from fsdp_studio.run_processes import process_table

ATTEMPT = "dead0attempt1"


def line(**event):
    return json.dumps(event, separators=(",", ":")) + "\n"


class DeadAttemptTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.run_dir = self.dir.name
        self.events = os.path.join(self.run_dir, "events", ATTEMPT)
        os.makedirs(self.events)

    def tearDown(self):
        self.dir.cleanup()

    def write_dead_run(self, status="running"):
        """A run whose owner (pid 4242) and guard (4243) died after the runtime's start and one step
        were merged; the runtime wrote two steps more."""
        start = line(type="run_start", attempt=ATTEMPT, time=1.0)
        steps = [line(type="step", step=s, time=1.0 + s) for s in (1, 2, 3)]
        processes = line(
            type="processes",
            time=1.05,
            processes=[{"pid": 4242, "role": "owner"}, {"pid": 4243, "role": "guard"}],
        )
        with open(stream_path(self.run_dir), "w") as f:
            f.write(line(type="run_end", status="completed", attempt="an-earlier-one"))
            log_from = f.tell()
            f.write(start + processes + steps[0])
        with open(os.path.join(self.events, "runtime.jsonl"), "w") as f:
            f.write(start + "".join(steps) + '{"type":"step","st')  # killed mid-line
        run_manifest.write(
            self.run_dir, {"status": status, "pids": [4242], "attempt": {"id": ATTEMPT, "log_from": log_from}}
        )

    def stream(self):
        with open(stream_path(self.run_dir)) as f:
            return [json.loads(text) for text in f]

    def test_kills_what_still_runs_merges_the_rest_and_writes_one_end(self):
        self.write_dead_run()
        env = dict(os.environ, FSDP_RUN_ATTEMPT=ATTEMPT, **{OWNER_MERGES_ENV: self.run_dir})
        left = subprocess.Popen(["sleep", "600"], env=env)
        try:
            reason = take_up(self.run_dir)
            self.assertIn(state_of(left.pid), (None, "Z"), "the attempt's process left running is killed")
        finally:
            left.kill()
            left.wait()
        got = self.stream()
        self.assertEqual([e["type"] for e in got[1:]], ["run_start", "processes", "step", "step", "step", "run_end"])
        end = got[-1]
        self.assertEqual((end["status"], end["step"], end["stand_in"], end["attempt"]), ("failed", 3, True, ATTEMPT))
        assert reason is not None
        self.assertEqual(end["reason"], reason)
        self.assertRegex(reason, r"its supervisor \(pid 4242\) and its guard \(pid 4243\) were killed")
        self.assertIn(f"sleep (pid {left.pid})", reason)
        manifest = run_manifest.read(self.run_dir)
        self.assertEqual((manifest["status"], manifest["end_reason"]), ("failed", reason))
        self.assertFalse(os.path.exists(os.path.join(self.run_dir, "events")), "the writers' files are removed")

    def test_the_ranks_die_before_the_launchers_they_watch(self):
        # Rank 0 watches the launcher its environment names: killed first, the launcher would be seen
        # gone and rank 0 would write an end of its own before the stand-in (run-frozen's take-up).
        env = dict(os.environ, FSDP_RUN_ATTEMPT=ATTEMPT, **{OWNER_MERGES_ENV: self.run_dir})
        launcher = subprocess.Popen(["sleep", "600"], env=env)  # fsdp-train: the lowest pid of them
        ranks_env = dict(env, FSDP_LAUNCHER_PID=str(launcher.pid))
        # mpirun and its two ranks; each rank says "up" from its own program, once its exec is done (a
        # process in the middle of its exec shows no environment), so the look below finds it. One
        # write each: a pipe keeps a write this short whole.
        rank = f"{shlex.quote(sys.executable)} -c 'import os, time; os.write(1, b\"up\\n\"); time.sleep(600)'"
        job = subprocess.Popen(["sh", "-c", f"{rank} & {rank} & wait"], env=ranks_env, stdout=subprocess.PIPE)
        ranks: list[int] = []
        try:
            assert job.stdout is not None
            self.assertEqual([job.stdout.readline(), job.stdout.readline()], [b"up\n", b"up\n"])
            table = process_table()
            ranks = sorted(pid for pid, (ppid, _) in table.items() if ppid == job.pid)
            self.assertEqual(len(ranks), 2)
            found = processes_of(self.run_dir, ATTEMPT)
            self.assertEqual(set(found), {launcher.pid, job.pid, *ranks})
            self.assertEqual(ranks_first(found, table), [*ranks, job.pid, launcher.pid])
        finally:
            for pid in ranks:
                os.kill(pid, signal.SIGKILL)
            for p in (job, launcher):
                p.kill()
                p.wait()
            if job.stdout is not None:
                job.stdout.close()

    def test_a_slurm_steps_ranks_die_before_srun_rank_0_first(self):
        # A step's ranks are below slurmstepd (9), not below srun (50), whose owner was killed (init adopts it).
        # Rank 0 (401 here) first: it watches the other ranks too.
        found = {50: Found(None, None), 400: Found(50, 1), 401: Found(50, 0)}
        table = {1: (0, 0), 9: (1, 0), 50: (1, 0), 400: (9, 0), 401: (9, 0)}
        self.assertEqual(ranks_first(found, table), [401, 400, 50])

    def test_an_ended_attempt_keeps_its_end_and_gets_its_lines(self):
        # The owner wrote run.json's end but its merge had stopped (a full disk): its files are kept.
        self.write_dead_run(status="stopped")
        run_manifest.update(self.run_dir, {"end_reason": "stopped by SIGTERM"})
        take_up(self.run_dir)
        end = self.stream()[-1]
        self.assertEqual((end["type"], end["status"], end.get("reason")), ("run_end", "stopped", "stopped by SIGTERM"))
        self.assertEqual(run_manifest.read(self.run_dir)["status"], "stopped")

    def test_nothing_to_take_up_after_an_attempt_that_ended(self):
        os.rmdir(self.events)
        run_manifest.write(self.run_dir, {"status": "completed", "attempt": {"id": ATTEMPT, "log_from": 0}})
        self.assertIsNone(take_up(self.run_dir))
        self.assertFalse(os.path.exists(stream_path(self.run_dir)))


if __name__ == "__main__":
    unittest.main()
