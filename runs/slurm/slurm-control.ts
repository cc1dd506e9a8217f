// Stopping a SLURM run: a queued job is simply cancelled (nothing to save); a running one gets the
// trainer's graceful stop on every rank (scancel --signal=USR1: each saves a checkpoint after its
// step and exits; SIGTERM for a person's script), and is cancelled only if it is still there after
// the grace period. A job cancelled while queued never had an owner in it to write its end: Stop,
// which cancelled it, records it in run.json through the login host's one writer.
import { jobActive, jobWaiting } from './slurm-state';
import { SlurmError, type SlurmCluster } from './slurm-cluster';
import { recordJobEnd } from './slurm-run';

export type StopOutcome =
  /** It was still queued: cancelled. */
  | 'cancelled-while-queued'
  /** The ranks saved and exited within the grace period. */
  | 'stopped'
  /** It did not end in time: cancelled (scancel), possibly without a checkpoint. */
  | 'cancelled-after-grace'
  | 'already-ended';

const POLL_MS = 1000;

/**
 * `signal`: the ranks' graceful stop (run.json's slurm.stop_signal); `runDir`: the run's folder on
 * the login host, where a job cancelled while queued has its end recorded.
 */
export async function stopSlurmJob(
  cluster: SlurmCluster,
  jobId: string,
  graceS: number,
  progress: (message: string) => void = () => undefined,
  signal: 'USR1' | 'TERM' = 'USR1',
  runDir?: string,
): Promise<StopOutcome> {
  const job = await cluster.job(jobId);
  if (job === 'unreachable') throw new SlurmError(`cannot ask SLURM about job ${jobId} on ${cluster.host.target}`);
  if (!job || !jobActive(job)) return 'already-ended';
  if (jobWaiting(job)) {
    await cluster.cancel(jobId);
    // As SLURM now reports it (CANCELLED, with its reason and time).
    const ended = runDir === undefined ? undefined : await cluster.job(jobId);
    if (ended && ended !== 'unreachable' && !jobActive(ended)) await recordJobEnd(cluster.host, runDir!, ended);
    return 'cancelled-while-queued';
  }
  await cluster.signalRanks(jobId, signal);
  progress(`job ${jobId}: the ranks save a checkpoint and exit…`);
  for (const deadline = Date.now() + graceS * 1000; Date.now() < deadline;) {
    await new Promise((r) => setTimeout(r, POLL_MS));
    const now = await cluster.job(jobId);
    if (now !== 'unreachable' && (!now || !jobActive(now))) return 'stopped';
    // Requeued after all (the time-limit signal came at the same moment): nothing runs, cancel it.
    if (now !== 'unreachable' && now && jobWaiting(now)) break;
  }
  await cluster.cancel(jobId);
  return 'cancelled-after-grace';
}
