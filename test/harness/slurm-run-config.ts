// samples/tiny-cpu.yaml made into a small 2-rank FULL_SHARD run submitted to SLURM, for the
// cluster tests: batch 4, no periodic checkpoints (a stop saves one), launch.slurm as given.
import assert from 'node:assert/strict';
import type { LaunchRequest } from '../../runs/launch/launcher';
import { sampleRunConfig } from './sample-run-config';

export interface SlurmRunOptions {
  steps: number;
  jobName?: string;
  partition?: string;
  timeLimit?: number | string;
  signalBeforeLimitS?: number;
  extra?: string[];
  /** launch.target (default local). */
  target?: string;
}

export function slurmRunConfig(dir: string, o: SlurmRunOptions): LaunchRequest {
  const slurm = {
    ...(o.jobName ? { job_name: o.jobName } : {}),
    ...(o.partition ? { partition: o.partition } : {}),
    ...(o.timeLimit !== undefined ? { time_limit: o.timeLimit } : {}),
    ...(o.signalBeforeLimitS !== undefined ? { signal_before_limit_s: o.signalBeforeLimitS } : {}),
    ...(o.extra ? { extra_directives: o.extra } : {}),
    stop_grace_s: 60,
  };
  const { configPath, config } = sampleRunConfig(dir, {
    name: 'on-slurm',
    steps: o.steps,
    sharding: 'FULL_SHARD',
    launch: (text) =>
      text
        .replace(/^(\s+)target: .*$/m, `$1target: ${o.target ?? 'local'}`)
        .replace(/^(\s+)nproc_per_node: .*$/m, `$1nproc_per_node: 2\n$1slurm: ${JSON.stringify(slurm)}`),
  });
  assert.ok(config.launch.slurm, 'launch.slurm is set');
  return { configPath, config };
}
