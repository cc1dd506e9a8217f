// A watched run submitted to SLURM: its job's state stands in for the process group. The run is
// followed again when a job of it runs after the last run_end (a requeue), and no longer once the
// job ended. This only reads: the job's end, for when the controller has forgotten the job, is
// written into run.json by the run's owner in the job (python/fsdp_studio/slurm_job_end.py).
import { jobActive, type SlurmJob } from '../slurm/slurm-state';
import type { SlurmCluster } from '../slurm/slurm-cluster';
import { goneJob, jobOfRecord } from '../slurm/slurm-run';
import type { RunStream } from './run-stream';
import type { Slot, WatchedRun } from './watched-run';

export class SlurmJobWatch {
  /** `cluster`: the target as a SLURM login host, for runs submitted there; `job`: the job as last reported. */
  constructor(
    private readonly run: WatchedRun,
    private readonly stream: RunStream,
    private readonly job: Slot<SlurmJob | undefined>,
    private readonly cluster: SlurmCluster | undefined,
  ) {}

  /** The run's SLURM job, when it was submitted to one and the target can be asked. */
  id(): string | undefined {
    return this.cluster ? this.run.manifest()?.slurm?.job_id : undefined;
  }

  /** Whether the run's SLURM job is to be asked about: it has one that may not have ended. */
  watched(): boolean {
    const job = this.job.get();
    return !this.run.disposed() && !!this.id() && (!job || jobActive(job));
  }

  /** Asks SLURM about the job; follows the run while it is active, and reads it to its end once it is not. */
  async check(jobId: string): Promise<void> {
    const { run, stream } = this;
    const asked = await this.cluster!.job(jobId);
    if (asked === 'unreachable') return;
    const job = asked ?? jobOfRecord(run.manifest()!) ?? goneJob(jobId);
    this.job.set(job);
    if (jobActive(job)) {
      if (!stream.followingMetrics && run.isLive()) run.follow();
      return;
    }
    // Its last lines may still be unread: read the log to its end, then stop following. A job that
    // ran and ended between two looks was never followed: read what it wrote first. (On the first
    // look, start() follows from the beginning right after.)
    if (stream.offset > 0 && !stream.followingMetrics && !run.disposed()) run.follow();
    await stream.readToTheEnd();
    if (run.disposed()) return;
    run.stopFollowing();
    // The job has ended, so every process of it has: run.json holds what its owner wrote last.
    if (asked) await run.refreshManifest();
  }
}
