// How a SLURM job's ranks start, as batch-script lines: the native runtime as one task per rank
// whose MPI joins through srun --mpi (PMIx/PMI2); a person's script as one task per rank with
// torch.distributed's env:// rendezvous set from SLURM_* (RANK from SLURM_PROCID, …); a person's
// torchrun as one torchrun per node whose c10d rendezvous is the job's first node. The person's
// words are passed as words (after `--`, or as "$@" of a fixed sh -c text): never read by a shell.
import type { RemoteWord } from '../../core/remote/remote-command';
import type { ScriptLine } from './slurm-script';

export type RankLaunch =
  /** The native runtime: one task per rank; MPI joins through srun --mpi. */
  | { kind: 'mpi'; argv: string[] }
  /** A person's script: one task per rank, env:// rendezvous from SLURM_*. */
  | { kind: 'env'; argv: string[] }
  /** A person's torchrun (or python -m torch.distributed.run) command: one torchrun per node. */
  | { kind: 'torchrun'; argv: string[] };

/** What stops the ranks gracefully: the runtime's USR1 (save, then exit); SIGTERM for people's scripts and torchrun. */
export function gracefulSignalOf(ranks: RankLaunch): 'USR1' | 'TERM' {
  return ranks.kind === 'mpi' ? 'USR1' : 'TERM';
}

/**
 * The rendezvous of torch.distributed: the first node of the job, and a port from the job id (two
 * jobs sharing a node do not meet on one port).
 */
const RENDEZVOUS: ScriptLine[] = [
  { comment: "torch.distributed's rendezvous: the job's first node, a port from the job id." },
  { shell: [{ raw: 'export MASTER_ADDR="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"' }] },
  { shell: [{ raw: 'export MASTER_PORT="$((20000 + SLURM_JOB_ID % 20000))"' }] },
];

/** Each task's env:// variables from SLURM's, then the person's command as its arguments. */
const ENV_RANK =
  'export RANK="$SLURM_PROCID" LOCAL_RANK="$SLURM_LOCALID" WORLD_SIZE="$SLURM_NTASKS" LOCAL_WORLD_SIZE="$SLURM_NTASKS_PER_NODE" GROUP_RANK="$SLURM_NODEID"; exec "$@"';

/** The lines before srun and the srun command (run in the background: the script waits for it). */
export function rankLines(
  ranks: RankLaunch,
  s: { mpi: string; cpusPerTask?: number; tasksPerNode: number },
  supervisor: string[] = [],
): ScriptLine[] {
  // srun does not take --cpus-per-task from sbatch since Slurm 22.05: say it again.
  const cpus = s.cpusPerTask ? [`--cpus-per-task=${s.cpusPerTask}`] : [];
  const background: RemoteWord = { raw: '&' };
  switch (ranks.kind) {
    case 'mpi':
      return [
        {
          comment: `One task per rank; their MPI joins the job through srun --mpi=${s.mpi}. --resume auto when continuing.`,
        },
        {
          shell: [
            ...supervisor,
            'srun',
            `--mpi=${s.mpi}`,
            '--kill-on-bad-exit=1',
            ...cpus,
            '--',
            ...ranks.argv,
            { raw: '"${resume[@]}"' },
            background,
          ],
        },
      ];
    case 'env':
      return [
        ...RENDEZVOUS,
        { comment: 'One task per rank, each with RANK, LOCAL_RANK and WORLD_SIZE from SLURM.' },
        {
          shell: [
            ...supervisor,
            'srun',
            '--kill-on-bad-exit=1',
            ...cpus,
            '--',
            '/bin/sh',
            '-c',
            ENV_RANK,
            'fsdp-rank',
            ...ranks.argv,
            background,
          ],
        },
      ];
    case 'torchrun': {
      if (s.tasksPerNode !== 1)
        throw new Error(
          `torchrun starts the ranks of its node itself: the job needs one task per node, not ${s.tasksPerNode}`,
        );
      return [
        ...RENDEZVOUS,
        { comment: 'One torchrun per node; they meet at the first node (c10d), the job id naming the rendezvous.' },
        {
          shell: [
            ...supervisor,
            'srun',
            '--ntasks-per-node=1',
            '--kill-on-bad-exit=1',
            ...cpus,
            '--',
            ...torchrunUnderSlurm(ranks.argv),
            background,
          ],
        },
      ];
    }
  }
}

/** torchrun's options that take a value (both spellings are accepted by torchrun). */
const VALUE_OPTIONS = new Set([
  'nnodes',
  'nproc_per_node',
  'rdzv_backend',
  'rdzv_endpoint',
  'rdzv_id',
  'rdzv_conf',
  'max_restarts',
  'monitor_interval',
  'start_method',
  'role',
  'node_rank',
  'master_addr',
  'master_port',
  'local_addr',
  'log_dir',
  'redirects',
  'tee',
  'local_ranks_filter',
  'logs_specs',
]);
/** The options the job decides: how many nodes and where they meet. */
const JOB_DECIDES = new Set([
  'nnodes',
  'node_rank',
  'rdzv_backend',
  'rdzv_endpoint',
  'rdzv_id',
  'master_addr',
  'master_port',
  'standalone',
]);

/**
 * A torchrun command line with the rendezvous the job decides: its own --nnodes, --node_rank,
 * --rdzv_*, --master_* and --standalone replaced by the job's node count and a c10d rendezvous at
 * MASTER_ADDR:MASTER_PORT (shell variables of the batch script, so { raw } words; everything the
 * person wrote stays a quoted word).
 */
export function torchrunUnderSlurm(argv: string[]): RemoteWord[] {
  const head = argv[0].endsWith('torchrun') ? 1 : argv.indexOf('torch.distributed.run') + 1;
  if (head <= 0) throw new Error(`not a torchrun command: ${argv.slice(0, 3).join(' ')}`);
  const kept: string[] = [];
  let i = head;
  for (; i < argv.length; i++) {
    const w = argv[i];
    if (!w.startsWith('-') || w === '--') break;
    const name = w.replace(/^--?/, '').split('=')[0].replace(/-/g, '_');
    const takesValue = VALUE_OPTIONS.has(name) && !w.includes('=');
    const words = takesValue ? [w, argv[i + 1] ?? ''] : [w];
    if (takesValue) i++;
    if (!JOB_DECIDES.has(name)) kept.push(...words);
  }
  return [
    ...argv.slice(0, head),
    { raw: '--nnodes="$SLURM_JOB_NUM_NODES"' },
    '--rdzv_backend=c10d',
    { raw: '--rdzv_id="$SLURM_JOB_ID"' },
    { raw: '--rdzv_endpoint="$MASTER_ADDR:$MASTER_PORT"' },
    ...kept,
    ...argv.slice(i),
  ];
}
