// A SLURM cluster as its login host reaches it: submit, release, signal and cancel jobs, and ask
// where jobs stand. Job states come from squeue while the controller holds the job, then from
// sacct where the cluster keeps accounting; a cluster without it (sacct: "accounting storage is
// disabled") is remembered as such and not asked again for a while: the run folder tells the rest.
// Requests for several jobs made in the same tick go out as one squeue.
import {
  accountingDisabled,
  myJobsArgv,
  parseSacct,
  parseSqueue,
  sacctArgv,
  SLURM_TIME_ENV,
  squeueArgv,
  type SlurmJob,
} from './slurm-state';
import { parseSbatchOutput, sbatchArgv, stopCommand } from './slurm-script';
import { COMMAND_NOT_FOUND, type CommandResult, type LoginHost } from '../machines/login-host';
import { LOCAL } from '../machines/run-machine';

/** How long a cluster without accounting is left alone before sacct is tried again. */
const ACCOUNTING_RETRY_MS = 10 * 60_000;

/** What a partition offers one node, for the memory check before a submission. */
export interface PartitionInfo {
  name: string;
  /** GPU type of the partition's nodes from their GRES ("gpu:h100:8" → "h100"), when it names one. */
  gpuType?: string;
  gpusPerNode?: number;
  /** Memory per node in bytes, when the cluster configures it. */
  memoryBytes?: number;
  cpusPerNode?: number;
}

export class SlurmError extends Error {}

/** squeue's states of jobs that are over (it lists them for MinJobAge after they end). */
const ENDED =
  /^(COMPLETED|CANCELLED|FAILED|TIMEOUT|PREEMPTED|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE|REVOKED|SPECIAL_EXIT)/;

/** A job as squeue or sacct report it; undefined: neither knows it; 'unreachable': could not ask. */
export type JobAnswer = SlurmJob | undefined | 'unreachable';

export class SlurmCluster {
  private accountingOffUntil = 0;
  private queued = new Map<string, Array<(job: JobAnswer) => void>>();
  private flushing: NodeJS.Immediate | undefined;

  constructor(readonly host: LoginHost) {}

  private get where(): string {
    return this.host.target === LOCAL ? 'this machine' : this.host.target;
  }

  /** Submits a batch script held (so nothing runs before run.json names the job); returns the job id. */
  async submitHeld(scriptPath: string, resume: boolean): Promise<string> {
    const out = await this.checked(sbatchArgv(scriptPath, { hold: true, resume }), 'submitting the job');
    const id = parseSbatchOutput(out);
    if (!id)
      throw new SlurmError(
        `sbatch on ${this.where} did not answer with a job id (it said ${JSON.stringify(out.trim().slice(0, 200))})`,
      );
    return id;
  }

  async release(jobId: string): Promise<void> {
    await this.checked(['scontrol', 'release', jobId], `releasing job ${jobId}`);
  }

  /** The graceful stop to a running job's ranks (and for TERM its supervisor: see stopCommand). */
  async signalRanks(jobId: string, signal: 'USR1' | 'TERM'): Promise<void> {
    await this.checked([...stopCommand(signal), jobId], `signalling job ${jobId}`);
  }

  async cancel(jobId: string): Promise<void> {
    await this.checked(['scancel', jobId], `cancelling job ${jobId}`);
  }

  /**
   * Cancels the user's jobs still queued or running in `workDir` (a run folder: the batch script's
   * --chdir), but those in `known`; returns their ids. For a submission whose sbatch failed or was
   * killed after it queued the job, so it does not wait in the queue unseen.
   */
  async cancelJobsIn(workDir: string, known: string[] = []): Promise<string[]> {
    const strays = (await this.myJobs())
      .filter((j) => j.workDir === workDir && !known.includes(j.id) && !ENDED.test(j.state))
      .map((j) => j.id);
    for (const id of strays) await this.cancel(id);
    return strays;
  }

  /** The job's state; undefined when neither squeue nor sacct knows it (any more). */
  job(jobId: string): Promise<JobAnswer> {
    return new Promise((resolve) => {
      const waiting = this.queued.get(jobId) ?? [];
      waiting.push(resolve);
      this.queued.set(jobId, waiting);
      this.flushing ??= setImmediate(() => void this.flush());
    });
  }

  /** Several jobs at once: squeue first, sacct for those it no longer holds. */
  async jobs(ids: string[]): Promise<Map<string, SlurmJob>> {
    const found = new Map<string, SlurmJob>();
    if (ids.length === 0) return found;
    // Allowed in an untrusted workspace for this machine's runs (extension/runs/runs.ts refuses a
    // remote login host there): squeue and sacct are the system's own, found on the PATH the editor
    // started with; no setting, run config or run.json names them, their cluster (SLURM_CONF comes
    // from the editor's environment too) or adds to their environment (SLURM_TIME_ENV is fixed).
    // What the workspace gives is the job ids from run.json, inside one --jobs= word: data, not options.
    const q = await this.host.run(squeueArgv(ids), { env: SLURM_TIME_ENV });
    // squeue fails outright ("Invalid job id specified") when it knows none of the ids.
    if (q.code !== 0 && !/invalid job id/i.test(q.stderr)) throw this.failure(q, 'asking squeue about jobs');
    for (const job of parseSqueue(q.stdout)) if (ids.includes(job.id)) found.set(job.id, job);
    const missing = ids.filter((id) => !found.has(id));
    if (missing.length && Date.now() >= this.accountingOffUntil) {
      const a = await this.host.run(sacctArgv(missing), { env: SLURM_TIME_ENV });
      if (a.code === 0) {
        for (const job of parseSacct(a.stdout)) if (missing.includes(job.id)) found.set(job.id, job);
      } else if (accountingDisabled(a.stderr) || a.code === COMMAND_NOT_FOUND) {
        this.accountingOffUntil = Date.now() + ACCOUNTING_RETRY_MS;
      }
    }
    return found;
  }

  /** The user's jobs the controller holds (queued, running, recently ended). */
  async myJobs(): Promise<SlurmJob[]> {
    const out = await this.checked(myJobsArgv(), 'listing your jobs', SLURM_TIME_ENV);
    return parseSqueue(out);
  }

  /** A partition's nodes (the default partition when none is named); undefined when sinfo does not know it. */
  async partition(name?: string): Promise<PartitionInfo | undefined> {
    const out = await this.checked(
      ['sinfo', '--noheader', ...(name ? [`--partition=${name}`] : []), '--format=%P\x1f%G\x1f%m\x1f%c'],
      'reading the partitions',
    );
    const rows = out
      .split('\n')
      .map((l) => l.split('\x1f'))
      .filter((f) => f.length === 4);
    const row = name
      ? rows.find((f) => f[0].replace(/\*$/, '') === name)
      : (rows.find((f) => f[0].endsWith('*')) ?? rows[0]);
    return row ? partitionInfo(row) : undefined;
  }

  private async flush(): Promise<void> {
    this.flushing = undefined;
    const batch = this.queued;
    this.queued = new Map();
    let found: Map<string, SlurmJob>;
    try {
      found = await this.jobs([...batch.keys()]);
    } catch {
      // Unreachable or failing: nothing is known this time; the next poll asks again.
      for (const waiters of batch.values()) for (const w of waiters) w('unreachable');
      return;
    }
    for (const [id, waiters] of batch) for (const w of waiters) w(found.get(id));
  }

  private async checked(argv: string[], what: string, env?: Record<string, string>): Promise<string> {
    const r = await this.host.run(argv, env ? { env } : {});
    if (r.code !== 0) throw this.failure(r, what, argv[0]);
    return r.stdout;
  }

  private failure(r: CommandResult, what: string, command = 'squeue'): SlurmError {
    if (r.code === COMMAND_NOT_FOUND)
      return new SlurmError(
        `${command} is not found on ${this.where}: launch.target must be a SLURM login host (one where sbatch and squeue run)`,
      );
    return new SlurmError(`${what} on ${this.where} failed: ${r.stderr.trim() || `exit ${r.code}`}`);
  }
}

/** One sinfo row: partition, GRES, memory per node (MB), CPUs per node. */
export function partitionInfo([partition, gres, memory, cpus]: string[]): PartitionInfo {
  const info: PartitionInfo = { name: partition.replace(/\*$/, '') };
  // "gpu:h100:8(S:0-1)", "gpu:a100_80g:4,shard:8", "gpu:4", "(null)"
  const gpu = /(?:^|,)gpu:(?:([A-Za-z][\w.-]*):)?(\d+)/.exec(gres);
  if (gpu) {
    if (gpu[1]) info.gpuType = gpu[1];
    info.gpusPerNode = Number(gpu[2]);
  }
  // Slurm reports 1 MB for nodes whose memory is not configured: unknown, not tiny.
  const mb = Number(memory.replace(/\+$/, ''));
  if (Number.isFinite(mb) && mb > 1) info.memoryBytes = mb * 2 ** 20;
  const c = Number(cpus.replace(/\+$/, ''));
  if (Number.isFinite(c) && c > 0) info.cpusPerNode = c;
  return info;
}
