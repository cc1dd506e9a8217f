// What SLURM says about a run's job, and what that means for the run. squeue answers while the
// controller holds the job (queued, running, and for MinJobAge — 300 s by default — after it
// ends); sacct answers after that where the cluster keeps accounting (slurmdbd). Both are asked for
// times as epoch seconds (SLURM_TIME_FORMAT=%s), so the login host's time zone does not matter.
// The run folder says the rest: whether the trainer started (run_start), and how it ended (run_end).

/** One job as the scheduler reports it. */
export interface SlurmJob {
  id: string;
  /** Slurm's state word: PENDING, RUNNING, COMPLETED, CANCELLED, TIMEOUT, … */
  state: string;
  /** Why it waits (Resources, Priority, BeginTime…), or why it ended; absent when Slurm says None. */
  reason?: string;
  /** Epoch seconds: when it started, or when it is expected to start while it waits. */
  startTime?: number;
  endTime?: number;
  workDir?: string;
  name?: string;
  /** "exit:signal" as sacct reports it. */
  exitCode?: string;
  /** record: run.json's slurm.final_state, kept by the editor once it saw the job end. */
  from: 'squeue' | 'sacct' | 'record';
}

/**
 * The state of a job neither squeue nor sacct knows (any more), on a cluster without accounting:
 * it ended while no one watched. The run folder says how.
 */
export const GONE = 'GONE';

/** A run's status once the job behind it is known (run-watch.ts RunStatus has the same words). */
export type JobRunStatus =
  'queued' | 'starting' | 'running' | 'completed' | 'failed' | 'stopped' | 'cancelled' | 'timed-out' | 'preempted';

/** Unit separator between squeue's fields: it cannot appear in a name, a path or a reason. */
export const FIELD_SEPARATOR = '\x1f';

/** squeue's output format: id, state, reason, start (or its estimate), end, working directory, name. */
export const SQUEUE_FORMAT = ['%i', '%T', '%r', '%S', '%e', '%Z', '%j'].join(FIELD_SEPARATOR);

/** sacct's fields (-P separates them with |; the name, which may hold one, comes last). */
export const SACCT_FIELDS = 'JobID,State,Reason,Start,End,ExitCode,WorkDir,JobName';

/** Environment for squeue and sacct: epoch seconds instead of the login host's local time. */
export const SLURM_TIME_ENV = { SLURM_TIME_FORMAT: '%s' };

/** `squeue` for these jobs, finished ones included. */
export function squeueArgv(ids: string[]): string[] {
  return ['squeue', '--noheader', '--states=all', `--jobs=${ids.join(',')}`, `--format=${SQUEUE_FORMAT}`];
}

/** `squeue` for the user's own jobs (attach). */
export function myJobsArgv(): string[] {
  return ['squeue', '--noheader', '--me', '--states=all', `--format=${SQUEUE_FORMAT}`];
}

/** `sacct` for jobs squeue no longer knows: one line per job (-X: the allocation, not its steps). */
export function sacctArgv(ids: string[]): string[] {
  return ['sacct', '--noheader', '--parsable2', '--allocations', `--jobs=${ids.join(',')}`, `--format=${SACCT_FIELDS}`];
}

export function parseSqueue(out: string): SlurmJob[] {
  const jobs: SlurmJob[] = [];
  for (const line of out.split('\n')) {
    const f = line.split(FIELD_SEPARATOR);
    if (f.length < 7 || !/^\d/.test(f[0])) continue;
    jobs.push(
      clean({
        id: f[0].trim(),
        state: f[1].trim(),
        reason: f[2],
        startTime: epoch(f[3]),
        endTime: epoch(f[4]),
        workDir: f[5],
        name: f.slice(6).join(FIELD_SEPARATOR),
        from: 'squeue',
      }),
    );
  }
  return jobs;
}

export function parseSacct(out: string): SlurmJob[] {
  const jobs: SlurmJob[] = [];
  for (const line of out.split('\n')) {
    const f = line.split('|');
    if (f.length < 8 || !/^\d/.test(f[0])) continue;
    // "CANCELLED by 1000": the state is the first word.
    jobs.push(
      clean({
        id: f[0].trim(),
        state: f[1].trim().split(/\s+/)[0],
        reason: f[2],
        startTime: epoch(f[3]),
        endTime: epoch(f[4]),
        exitCode: f[5],
        workDir: f[6],
        name: f.slice(7).join('|'),
        from: 'sacct',
      }),
    );
  }
  return jobs;
}

/** sacct's answer on a cluster without accounting storage (no slurmdbd). */
export function accountingDisabled(stderr: string): boolean {
  return /accounting storage is disabled|slurmdbd|Problem talking to the database/i.test(stderr);
}

const WAITING = new Set(['PENDING', 'REQUEUED', 'REQUEUE_HOLD', 'REQUEUE_FED', 'RESV_DEL_HOLD', 'SPECIAL_EXIT']);
const RUNNING = new Set([
  'RUNNING',
  'COMPLETING',
  'SUSPENDED',
  'STAGE_OUT',
  'SIGNALING',
  'RESIZING',
  'STOPPED',
  'CONFIGURING',
]);

/** Whether the job is still in the queue or running: it may still write to the run. */
export function jobActive(job: SlurmJob): boolean {
  return WAITING.has(job.state) || RUNNING.has(job.state);
}

export function jobWaiting(job: SlurmJob): boolean {
  return WAITING.has(job.state);
}

/** What the run folder says, for combining with the job's state. Times are epoch seconds. */
export interface RunFacts {
  /** The latest run_start's time. */
  startedAt?: number;
  /** The latest run_end (after the latest run_start), if any. */
  end?: { status: 'completed' | 'failed' | 'stopped'; time: number };
  /**
   * Whether the latest run_start / run_end is the attempt the job's owner named in run.json as the job
   * started (the id both carry): told by the stream, it decides instead of the clocks below. Absent
   * where either side names no attempt (a log or run.json from before attempts, a job not yet started).
   */
  startOfThisJob?: boolean;
  endOfThisJob?: boolean;
}

/**
 * The controller's and the compute nodes' clocks agree to within munge's tolerance; a trainer's
 * events come after its job started. Events more than this before the job's start belong to an
 * earlier job of the run (a requeue or a resume).
 */
const CLOCK_SLACK_S = 2;

/**
 * The run's status given its job. While the job waits the run is queued; while it runs, the run
 * folder tells starting (no run_start of this job yet) from running and from ended (the trainer
 * finished, the job is winding down). A finished job's own verdict wins where it says more than
 * the trainer could: cancelled, timed out, preempted, a node failure or out of memory.
 */
export function jobRunStatus(job: SlurmJob, run: RunFacts): JobRunStatus {
  if (WAITING.has(job.state)) return 'queued';
  const ofThisJob = (t: number | undefined) =>
    t !== undefined && (job.startTime === undefined || t >= job.startTime - CLOCK_SLACK_S);
  // An end is this job's only when the start before it is too: a job resumed within seconds of
  // the last one's end (squeue's times are whole seconds) would otherwise inherit that end.
  const startOfThisJob = run.startOfThisJob ?? (run.startedAt === undefined || ofThisJob(run.startedAt));
  const endOfThisJob =
    run.endOfThisJob ??
    (run.end !== undefined &&
      ofThisJob(run.end.time) &&
      startOfThisJob &&
      run.end.time >= (run.startedAt ?? -Infinity));
  const end = endOfThisJob ? run.end : undefined;
  if (RUNNING.has(job.state)) {
    if (job.state === 'CONFIGURING') return 'starting';
    if (end) return end.status;
    return (run.startOfThisJob ?? ofThisJob(run.startedAt)) ? 'running' : 'starting';
  }
  switch (job.state) {
    case 'CANCELLED':
      return 'cancelled';
    case 'TIMEOUT':
    case 'DEADLINE':
      return 'timed-out';
    case 'PREEMPTED':
      return 'preempted';
    case 'COMPLETED':
      return end?.status ?? run.end?.status ?? 'failed';
    case 'FAILED':
      return end?.status ?? 'failed';
    case GONE:
      return run.end?.status ?? 'failed';
    default:
      return 'failed'; // NODE_FAIL, BOOT_FAIL, OUT_OF_MEMORY, REVOKED
  }
}

/** Why the run is where it is, in words, from its job: while it waits, and when the job ended it. */
export function jobReason(job: SlurmJob, status: JobRunStatus, now = Date.now() / 1000): string | undefined {
  const id = `job ${job.id}`;
  if (status === 'queued') {
    const why = job.state === 'PENDING' ? waitingFor(job.reason) : job.state.toLowerCase().replace(/_/g, ' ');
    const start = job.startTime && job.startTime > now ? `; expected to start ${clockTime(job.startTime, now)}` : '';
    return `${id} queued: ${why}${start}`;
  }
  switch (job.state) {
    case 'CANCELLED':
      return `${id} was cancelled${job.reason ? ` (${job.reason})` : ''}`;
    case 'TIMEOUT':
      return `${id} reached its time limit`;
    case 'DEADLINE':
      return `${id} reached its deadline`;
    case 'PREEMPTED':
      return `${id} was preempted`;
    case 'NODE_FAIL':
      return `${id} ended by a node failure`;
    case 'BOOT_FAIL':
      return `${id} could not boot its nodes`;
    case 'OUT_OF_MEMORY':
      return `${id} ran out of memory`;
    case 'FAILED':
      return status === 'failed'
        ? `${id} failed${job.exitCode ? ` (exit ${job.exitCode})` : ''}${job.reason ? `: ${job.reason}` : ''}`
        : undefined;
    case GONE:
      return status === 'failed'
        ? `${id} is no longer known to SLURM and the trainer did not report the end of the run; see slurm-${job.id}.out in the run folder`
        : undefined;
    case 'COMPLETED':
      return status === 'failed'
        ? `${id} ended without the trainer reporting the end of the run; see slurm-${job.id}.out in the run folder`
        : undefined;
    default:
      return undefined;
  }
}

/** The job in a few words for a status line: "job 42 · waiting for resources · expected to start at 12:10". */
export function jobSummary(job: SlurmJob, status: JobRunStatus, now = Date.now() / 1000): string {
  if (status !== 'queued') return `job ${job.id}`;
  const why =
    job.state === 'PENDING'
      ? waitingFor(job.reason).replace(/ \(.*\)$/, '')
      : job.state.toLowerCase().replace(/_/g, ' ');
  return [
    `job ${job.id}`,
    why,
    ...(job.startTime && job.startTime > now ? [`expected to start ${clockTime(job.startTime, now)}`] : []),
  ].join(' · ');
}

/** Slurm's pending reasons people meet most, said plainly; others as Slurm names them. */
function waitingFor(reason: string | undefined): string {
  switch (reason) {
    case undefined:
      return 'waiting to be scheduled';
    case 'Resources':
      return 'waiting for resources';
    case 'Priority':
      return 'waiting behind jobs of higher priority';
    case 'BeginTime':
      return 'waiting for its begin time (a requeued job waits a short while)';
    case 'JobHeldUser':
      return 'held (scontrol release to let it run)';
    case 'Dependency':
      return 'waiting for the jobs it depends on';
    default:
      return `waiting (${reason})`;
  }
}

function clockTime(t: number, now: number): string {
  const d = new Date(t * 1000);
  const hm = `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`;
  if (d.toDateString() === new Date(now * 1000).toDateString()) return `at ${hm}`;
  return `on ${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')} at ${hm}`;
}

function epoch(s: string | undefined): number | undefined {
  const t = s?.trim();
  return t && /^\d+$/.test(t) && Number(t) > 0 ? Number(t) : undefined;
}

function clean(job: SlurmJob): SlurmJob {
  const out: SlurmJob = { id: job.id, state: job.state, from: job.from };
  const reason = job.reason?.trim();
  if (reason && reason !== 'None' && reason !== '(null)') out.reason = reason;
  if (job.startTime !== undefined) out.startTime = job.startTime;
  if (job.endTime !== undefined) out.endTime = job.endTime;
  if (job.workDir?.trim()) out.workDir = job.workDir.trim();
  if (job.name !== undefined) out.name = job.name;
  if (job.exitCode?.trim()) out.exitCode = job.exitCode.trim();
  return out;
}
