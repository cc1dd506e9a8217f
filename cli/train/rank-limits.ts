// How many ranks this machine can run: one per core for CPU runs (each rank's OpenMP threads and
// OpenBLAS need a core; `--nproc 1000` on 2 cores started ~1000 processes and drove the load to
// 230), one per GPU for CUDA runs. More only when asked for (launch.oversubscribe, --oversubscribe),
// as tests that emulate 4 ranks on 2 cores do — and even then at most OVERSUBSCRIBE_FACTOR a core
// (a GPU): `--nproc 1000 --oversubscribe` still started 1000 processes.
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import type { ResolvedRunConfig } from '../../core/config/run-config';

/** Ranks --oversubscribe lets share one core (GPU): enough to emulate nodes, not enough to swamp the machine. */
export const OVERSUBSCRIBE_FACTOR = 8;

/** Why the job's ranks do not fit this machine, or undefined when they do (or it is not for this machine to say). */
export function rankCountProblem(config: ResolvedRunConfig, nativeTrainer: string): string | undefined {
  const ranks = config.launch.nproc_per_node ?? 1;
  // Several nodes: the ranks are on other hosts, whose cores mpirun's host file decides.
  if (ranks <= 1 || (config.launch.nnodes ?? 1) > 1) return undefined;
  const cuda = config.launch.device === 'cuda';
  const have = cuda ? gpuCount(nativeTrainer) : os.availableParallelism();
  if (have === undefined || ranks <= have) return undefined;
  const what = cuda ? `${have} GPU${have === 1 ? '' : 's'}` : `${have} core${have === 1 ? '' : 's'}`;
  if (!config.launch.oversubscribe) {
    return `launch.nproc_per_node is ${ranks} but this machine has ${what}: ranks beyond that share ${cuda ? 'GPUs' : 'cores'} and slow the whole job down. Use at most ${have}, or run them anyway with --oversubscribe (launch.oversubscribe: true)`;
  }
  const cap = OVERSUBSCRIBE_FACTOR * have;
  if (ranks <= cap) return undefined;
  return `launch.nproc_per_node is ${ranks}, more than --oversubscribe allows here: at most ${cap} ranks (${OVERSUBSCRIBE_FACTOR} per ${cuda ? 'GPU' : 'core'}; this machine has ${what})`;
}

/** GPUs the runtime sees (its --probe), or undefined when it cannot say. */
function gpuCount(nativeTrainer: string): number | undefined {
  const r = spawnSync(nativeTrainer, ['--probe'], { encoding: 'utf8', timeout: 30_000 });
  try {
    return (JSON.parse(r.stdout) as { gpus: unknown[] }).gpus.length;
  } catch {
    return undefined;
  }
}
