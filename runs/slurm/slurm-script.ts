// The batch script of a SLURM run (job.sbatch, kept in the run folder and shown to the user): the
// job's shape as #SBATCH lines, then the ranks started by srun, one task per GPU, whose MPI joins
// the job through PMIx or PMI2 (srun --mpi) as it would under mpirun. Every line is made by one
// function, scriptLine, so a job name, partition or path with quotes, `$()` or `#` in it reaches
// sbatch and the shell as data: shell words are quoted by core/remote (POSIX single quotes), and
// #SBATCH values by sbatch's own rules for directives (double quotes, backslash escapes).
//
// A time limit is survived, not suffered: at signal_before_limit_s before it, Slurm signals the
// batch shell (--signal=B:USR1@N, only the shell), which passes the graceful stop to the ranks (they
// save a checkpoint and exit) and then requeues the job (--requeue; the same job id); the requeued
// job, and one requeued after a preemption or a node failure, continues with --resume auto.
// "Stop run" signals the ranks only (scancel --signal=USR1), so a stop is never mistaken for the
// time limit. "Resume run" submits the script again with `--resume auto` as its arguments. A
// person's own script or torchrun is stopped with SIGTERM instead, and requeued at the time limit
// whatever it exits with (its own checkpoint is its business; slurm-ranks.ts starts it).
import type { ResolvedRunConfig } from '../../core/config/run-config';
import { directiveProblem } from '../../core/config/sbatch-options';
import { commandLine, quoteWord, type RemoteWord } from '../../core/remote/remote-command';
import { gracefulSignalOf, rankLines, type RankLaunch } from './slurm-ranks';

export interface SlurmJobShape {
  jobName: string;
  nodes: number;
  tasksPerNode: number;
  /** --gpus-per-node; absent on the CPU. */
  gpusPerNode?: number;
  cpusPerTask?: number;
  partition?: string;
  account?: string;
  qos?: string;
  /** sbatch --time, as the config gives it (minutes, or a Slurm time string). */
  timeLimit?: string | number;
  /** srun --mpi (pmix, pmi2, pmix_v4…). */
  mpi: string;
  /** 0: no signal before the time limit. */
  signalBeforeLimitS: number;
  requeue: boolean;
  /** Extra #SBATCH options, one each ("--constraint=a100"). */
  extraDirectives: string[];
}

export interface BatchScriptSpec {
  shape: SlurmJobShape;
  /** The run folder on the cluster's shared filesystem: the job's working directory and log's home. */
  runDir: string;
  /** How the ranks start: the native runtime, a person's script, or their torchrun (slurm-ranks.ts). */
  ranks: RankLaunch;
  /** Environment for every rank (exported by the script). */
  env?: Record<string, string>;
  /** The folder the ranks run in (a person's code); default the run folder. */
  cwd?: string;
  /**
   * The run's owner: the companion's supervisor (python/fsdp_studio/supervise.py) around srun, which
   * writes run.json as for a run on one machine (and a person's command's run_start and run_end).
   */
  supervisor?: string[];
  /** Comment lines at the top: what the run is and where it came from. */
  about: string[];
}

/** The script's file name in the run folder. */
export const BATCH_SCRIPT = 'job.sbatch';

/** The batch shell's output, per job id (a requeued job appends to its file). */
export const JOB_OUTPUT = 'slurm-%j.out';

/** The job a run config asks for: launch.nnodes nodes × launch.nproc_per_node tasks, and launch.slurm. */
export function slurmJobShape(config: Pick<ResolvedRunConfig, 'launch' | 'name'>): SlurmJobShape {
  const l = config.launch;
  const s = l.slurm ?? {};
  const tasksPerNode = l.nproc_per_node ?? 1;
  // One task per GPU: a CUDA run asks for as many GPUs per node as it has tasks there.
  const gpusPerNode = s.gpus_per_node ?? (l.device === 'cuda' ? tasksPerNode : undefined);
  return {
    jobName: s.job_name ?? config.name ?? 'fsdp-run',
    nodes: l.nnodes ?? 1,
    tasksPerNode,
    ...(gpusPerNode ? { gpusPerNode } : {}),
    ...(s.cpus_per_task ? { cpusPerTask: s.cpus_per_task } : {}),
    ...(s.partition !== undefined ? { partition: s.partition } : {}),
    ...(s.account !== undefined ? { account: s.account } : {}),
    ...(s.qos !== undefined ? { qos: s.qos } : {}),
    ...(s.time_limit !== undefined ? { timeLimit: s.time_limit } : {}),
    mpi: s.mpi ?? 'pmix',
    signalBeforeLimitS: s.signal_before_limit_s ?? 120,
    requeue: s.requeue ?? true,
    extraDirectives: s.extra_directives ?? [],
  };
}

/** One line of a batch script, as a value: what it says, not how it is quoted. */
export type ScriptLine =
  | { comment: string }
  /** `#SBATCH --option=value`, or `#SBATCH --option` when value is absent. */
  | { directive: string; value?: string | number }
  /** An extra #SBATCH option exactly as the person wrote it (one option, quoted as one word). */
  | { directiveWord: string }
  /** Shell words: strings are quoted as one literal word; { raw } is syntax written in this file. */
  | { shell: RemoteWord[] }
  | { blank: true };

/** The one function that turns a script line into text. Throws on what no quoting can carry. */
export function scriptLine(line: ScriptLine): string {
  if ('blank' in line) return '';
  if ('comment' in line) return `# ${line.comment.replace(/[\r\n\0]+/g, ' ')}`.trimEnd();
  if ('shell' in line) {
    for (const w of line.shell)
      if (typeof w === 'string' && /[\r\n]/.test(w))
        throw new Error(`a line break cannot be part of a word in the batch script: ${JSON.stringify(w)}`);
    return commandLine(line.shell);
  }
  if ('directiveWord' in line) return `#SBATCH ${directiveWord(line.directiveWord)}`;
  if (!/^--?[A-Za-z][A-Za-z0-9-]*$/.test(line.directive))
    throw new Error(`not an sbatch option: ${JSON.stringify(line.directive)}`);
  return `#SBATCH ${line.value === undefined ? line.directive : `${line.directive}=${directiveWord(String(line.value))}`}`;
}

/**
 * A value as sbatch reads it in an #SBATCH line: double quotes group it, a backslash keeps the
 * next character literal (so `"` and `\` inside are escaped); unquoted, a `#` would start a comment
 * and whitespace would end the value. A line break would end the line itself: refused.
 */
export function directiveWord(value: string): string {
  if (/[\0\r\n]/.test(value))
    throw new Error(`an #SBATCH value cannot hold a line break or NUL: ${JSON.stringify(value)}`);
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(value)) return value;
  return `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/**
 * Slurm expands %j, %u… in --output paths; a literal % in the run folder's path is written %%.
 * (Its other escapes, `\\`, are read only when the path starts with one.)
 */
export function outputPattern(runDir: string, file: string): string {
  return `${runDir.replace(/%/g, '%%')}/${file}`;
}

export function batchScript(spec: BatchScriptSpec): string {
  const s = spec.shape;
  // Refused at launch whatever checked the config before: a directive that sets what this script
  // sets, or changes how sbatch or the job behaves (--wait, --array, …: sbatch-options.ts).
  for (const line of s.extraDirectives) {
    const problem = directiveProblem(line);
    if (problem?.severity === 'error') throw new Error(`launch.slurm.extra_directives: ${problem.message}`);
  }
  const signal = gracefulSignalOf(spec.ranks);
  for (const name of Object.keys(spec.env ?? {}))
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
      throw new Error(`not an environment variable name: ${JSON.stringify(name)}`);
  const lines: ScriptLine[] = [
    ...spec.about.map((comment) => ({ comment })),
    { comment: 'Written by FSDP Studio; submit it again by hand with: sbatch job.sbatch [--resume auto]' },
    { directive: '--job-name', value: s.jobName },
    { directive: '--chdir', value: spec.runDir },
    { directive: '--output', value: outputPattern(spec.runDir, JOB_OUTPUT) },
    { directive: '--open-mode', value: 'append' },
    { directive: '--nodes', value: s.nodes },
    { directive: '--ntasks-per-node', value: s.tasksPerNode },
    ...(s.gpusPerNode ? [{ directive: '--gpus-per-node', value: s.gpusPerNode }] : []),
    ...(s.cpusPerTask ? [{ directive: '--cpus-per-task', value: s.cpusPerTask }] : []),
    ...(s.partition !== undefined ? [{ directive: '--partition', value: s.partition }] : []),
    ...(s.account !== undefined ? [{ directive: '--account', value: s.account }] : []),
    ...(s.qos !== undefined ? [{ directive: '--qos', value: s.qos }] : []),
    ...(s.timeLimit !== undefined ? [{ directive: '--time', value: s.timeLimit }] : []),
    ...(s.requeue ? [{ directive: '--requeue' }] : [{ directive: '--no-requeue' }]),
    ...(s.signalBeforeLimitS > 0 ? [{ directive: '--signal', value: `B:USR1@${s.signalBeforeLimitS}` }] : []),
    ...s.extraDirectives.map((directiveWord) => ({ directiveWord })),
    { blank: true },
    ...Object.entries(spec.env ?? {}).map(([name, value]): ScriptLine => ({
      shell: [{ raw: `export ${name}=${quoteWord(value)}` }],
    })),
    ...BODY,
    {
      shell: [
        {
          raw: `trap 'time_up=1; signals=$((signals + 1)); echo "fsdp-studio: time limit near: stopping the ranks (SIG${signal})" >&2; ${stopRanks(signal, !!spec.supervisor)}' USR1`,
        },
      ],
    },
    // A person's command: "Stop run" comes to this shell as USR2 (see stopCommand).
    ...(signal === 'TERM'
      ? [
          {
            shell: [
              {
                raw: `trap 'signals=$((signals + 1)); echo "fsdp-studio: stop requested: stopping the ranks (SIGTERM)" >&2; ${stopRanks(signal, !!spec.supervisor)}' USR2`,
              },
            ],
          },
        ]
      : []),
    ...(spec.cwd ? [{ shell: [{ raw: 'cd --' }, spec.cwd, { raw: '|| exit 1' }] }] : []),
    { blank: true },
    ...rankLines(spec.ranks, s, spec.supervisor),
    ...waitAndRequeue(spec.ranks.kind === 'mpi'),
  ];
  return `#!/bin/bash\n${lines.map(scriptLine).join('\n')}\n`;
}

/** Before the ranks start: how this job continues a run, and what the time-limit signal does. */
const BODY: ScriptLine[] = [
  { comment: 'A requeued job (time limit, preemption, node failure) continues from the newest checkpoint;' },
  { comment: 'so does one submitted with --resume auto (FSDP: Resume run).' },
  { shell: [{ raw: 'resume=("$@")' }] },
  { shell: [{ raw: 'if [ "${SLURM_RESTART_COUNT:-0}" -gt 0 ]; then resume=(--resume auto); fi' }] },
  { comment: 'The time-limit signal comes to this shell only: pass the graceful stop to the ranks, requeue after.' },
  { shell: [{ raw: 'time_up=0 signals=0 srun_pid=' }] },
];

/**
 * srun runs in the background so the trap runs at once (bash defers traps until a foreground
 * command ends). `wait` returns early when the trap runs: wait again until srun's own status comes
 * (127: already collected).
 */
function waitAndRequeue(onlyIfStopped: boolean): ScriptLine[] {
  return [
    { shell: [{ raw: 'srun_pid=$!' }] },
    { shell: [{ raw: 'status=0' }] },
    {
      shell: [
        {
          raw: 'while :; do seen=$signals; wait "$srun_pid"; rc=$?; [ "$rc" != 127 ] && status=$rc; [ "$signals" = "$seen" ] && break; done',
        },
      ],
    },
    // The runtime exits 0 only when the run completed; a person's script may exit 0 when stopped.
    {
      shell: [
        { raw: onlyIfStopped ? 'if [ "$time_up" = 1 ] && [ "$status" != 0 ]; then' : 'if [ "$time_up" = 1 ]; then' },
      ],
    },
    { shell: [{ raw: '  echo "fsdp-studio: requeueing job $SLURM_JOB_ID to continue from its checkpoint" >&2' }] },
    { shell: [{ raw: '  scontrol requeue "$SLURM_JOB_ID" && exit 0' }] },
    { shell: [{ raw: 'fi' }] },
    { shell: [{ raw: 'exit "$status"' }] },
  ];
}

/**
 * "Stop run" for a job: the runtime's ranks get USR1 directly (scancel to the steps, not the batch
 * shell, which must not take it for the time limit). A person's command is stopped through the
 * batch shell (USR2, to it alone): it tells the supervisor (SIGTERM: it notes the stop) and sends
 * the ranks SIGTERM. srun itself must not get SIGTERM: it would end the step at once.
 */
export function stopCommand(signal: 'USR1' | 'TERM'): string[] {
  return signal === 'USR1' ? ['scancel', '--signal=USR1'] : ['scancel', '--batch', '--signal=USR2'];
}

/** Shell text (inside a trap) that stops the ranks: the graceful signal to the steps; the supervisor first. */
function stopRanks(signal: 'USR1' | 'TERM', supervised: boolean): string {
  return `[ -n "$srun_pid" ] && { ${supervised ? 'kill -TERM "$srun_pid"; ' : ''}scancel --signal=${signal} "$SLURM_JOB_ID"; }`;
}

/** sbatch's argument vector: held (released once run.json names the job), script arguments after. */
export function sbatchArgv(scriptPath: string, opts: { hold: boolean; resume: boolean }): string[] {
  return [
    'sbatch',
    '--parsable',
    ...(opts.hold ? ['--hold'] : []),
    '--',
    scriptPath,
    ...(opts.resume ? ['--resume', 'auto'] : []),
  ];
}

/** The job id in sbatch --parsable's answer ("1234" or "1234;cluster"); undefined when it is not one. */
export function parseSbatchOutput(out: string): string | undefined {
  const id = out.trim().split('\n').pop()?.split(';')[0].trim();
  return id && /^\d+(_\d+)?$/.test(id) ? id : undefined;
}
