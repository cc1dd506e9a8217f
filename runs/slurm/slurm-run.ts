// What run.json keeps of a SLURM run's job: the job's end as SLURM reported it, so a cancelled,
// timed-out or preempted run still says so after the controller forgot the job (MinJobAge, 300 s
// by default) on a cluster without accounting. The run's owner in the job writes it as SLURM ends
// the job (python/fsdp_studio/slurm_job_end.py); a job cancelled before it ran had no owner, and
// Stop, which cancelled it, writes it here through the one writer on the login host. Readers
// (runs/watch/) only read it.
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
 * Records the end of a job that never ran (cancelled while queued) in the run's run.json, read
 * again just before; a run still starting is marked failed with the job's reason.
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
