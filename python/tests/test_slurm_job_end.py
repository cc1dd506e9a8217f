"""Issue 41 item 2: a SLURM job's end is recorded by the run's owner in the job (slurm_job_end.py),
not by an editor watching it. The real job's end — scancel, SIGTERM, the record in run.json — is
tested on a real slurmctld/slurmd in test/runs/slurm.test.ts; here, what SLURM's state and reason
mean while the job completes, and a requeued job's start clearing the record of its last end.

Run: python3 -m unittest discover -s python/tests (test/runs/python-companion.test.ts runs it).
"""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from fsdp_studio import run_manifest
from fsdp_studio.slurm_job_end import JOB_ID_ENV, SlurmJobEnd, ending_state


class EndingState(unittest.TestCase):
    def test_a_job_slurm_is_ending_says_why_by_its_reason(self):
        # As squeue reports a job between SLURM's SIGTERM and its SIGKILL: TimeLimit and None as seen
        # on Slurm 22.05; a reason naming a preemption is not seen here (no preemption configured).
        self.assertEqual(ending_state("COMPLETING", "TimeLimit"), "TIMEOUT")
        self.assertEqual(ending_state("COMPLETING", "None"), "CANCELLED")
        self.assertEqual(ending_state("COMPLETING", "Preempted"), "PREEMPTED")

    def test_a_running_job_is_not_ending_and_a_settled_state_is_kept(self):
        # The batch shell's own stop (the time-limit trap) and Stop's scancel --signal leave it RUNNING.
        self.assertIsNone(ending_state("RUNNING", "None"))
        self.assertIsNone(ending_state("PENDING", "BeginTime"))
        self.assertEqual(ending_state("TIMEOUT", "TimeLimit"), "TIMEOUT")


class RequeuedStart(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="fsdp-slurm-end-")
        self.saved = os.environ.get(JOB_ID_ENV)

    def tearDown(self):
        if self.saved is None:
            os.environ.pop(JOB_ID_ENV, None)
        else:
            os.environ[JOB_ID_ENV] = self.saved

    def manifest(self, job_id):
        slurm = {"job_id": job_id, "jobs": [job_id], "final_state": "CANCELLED", "ended": 1700000000}
        doc = {"run_id": "r", "status": "stopped", "slurm": slurm}
        run_manifest.write(self.dir, doc)
        return doc

    def test_the_job_run_json_names_starting_again_clears_its_recorded_end(self):
        os.environ[JOB_ID_ENV] = "42"
        SlurmJobEnd(self.dir, self.manifest("42"), []).started()
        slurm = run_manifest.read(self.dir)["slurm"]
        self.assertEqual(slurm, {"job_id": "42", "jobs": ["42"]})

    def test_another_job_in_the_folder_leaves_the_run_jobs_record_alone(self):
        # A job submitted by hand from job.sbatch is not the run's current one.
        os.environ[JOB_ID_ENV] = "43"
        SlurmJobEnd(self.dir, self.manifest("42"), []).started()
        self.assertEqual(run_manifest.read(self.dir)["slurm"]["final_state"], "CANCELLED")


if __name__ == "__main__":
    unittest.main()
