// What the editor keeps of a SLURM run's job in run.json: the job's end as SLURM reported it, so
// a cancelled, timed-out or preempted run still says so after the controller forgot the job
// (MinJobAge, 300 s by default) on a cluster without accounting. Written once the job ended, when
// no owner of the run is left to write run.json, through the one writer on the login host.
import { GONE, jobReason, jobRunStatus, type SlurmJob } from './slurm-state';
import type { RunManifest } from '../../core/protocol/run-manifest';
import { readManifestOn, writeManifestOn } from '../folder/run-folder';
import type { LoginHost } from '../machines/login-host';

/** The job's end as run.json recorded it; undefined while none is recorded. */
export function jobOfRecord(m: RunManifest): SlurmJob | undefined {
  const s = m.slurm;
  if (!s?.job_id) return undefined;
  if (!s.final_state) return undefined;
  return {
    id: s.job_id,
    state: s.final_state,
    ...(s.final_reason ? { reason: s.final_reason } : {}),
    ...(s.ended ? { endTime: s.ended } : {}),
    from: 'record',
  };
}

/** A job nobody can report on any more (see GONE). */
export function goneJob(jobId: string): SlurmJob {
  return { id: jobId, state: GONE, from: 'record' };
}

/**
 * Records a finished job's end in the run's run.json (read again just before: the trainer may have
 * written it last). A run whose trainer never reported its end is marked failed with the job's reason.
 */
export async function recordJobEnd(host: LoginHost, runDir: string, job: SlurmJob): Promise<void> {
  const m = await readManifestOn(host, runDir);
  // The writer on the login host is the companion the run was submitted with (slurm.companion).
  const companion = m?.slurm?.companion;
  if (!m || m.slurm?.job_id !== job.id || !companion) return;
  m.slurm = {
    ...m.slurm!,
    final_state: job.state,
    ...(job.reason ? { final_reason: job.reason } : {}),
    ...(job.endTime ? { ended: job.endTime } : {}),
  };
  if (m.status === 'starting' || m.status === 'running') {
    const status = jobRunStatus(job, {});
    m.status = status === 'completed' || status === 'stopped' ? status : 'failed';
    m.end_reason = jobReason(job, status) ?? `job ${job.id} ended (${job.state})`;
  }
  m.updated = Date.now() / 1000;
  await writeManifestOn(host, companion, runDir, m);
}
