// samples/tiny-cpu.yaml made into a small 2-rank FULL_SHARD run submitted to SLURM, for the
// cluster tests: batch 4, no periodic checkpoints (a stop saves one), launch.slurm as given.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadRunConfig } from '../../core/config/run-config';
import type { LaunchRequest } from '../../extension/runs/launcher';
import { repoRoot } from '../../scripts/code-server';

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
  const data = path.join(repoRoot, 'samples', 'data');
  const slurm = {
    ...(o.jobName ? { job_name: o.jobName } : {}),
    ...(o.partition ? { partition: o.partition } : {}),
    ...(o.timeLimit !== undefined ? { time_limit: o.timeLimit } : {}),
    ...(o.signalBeforeLimitS !== undefined ? { signal_before_limit_s: o.signalBeforeLimitS } : {}),
    ...(o.extra ? { extra_directives: o.extra } : {}),
    stop_grace_s: 60,
  };
  const text = readFileSync(path.join(repoRoot, 'samples', 'tiny-cpu.yaml'), 'utf8')
    .replace(/^name: .*$/m, 'name: on-slurm')
    .replace(/^(\s+)train: .*$/m, `$1train: ${JSON.stringify(path.join(data, 'fortunes-byte-train.tok'))}`)
    .replace(/^(\s+)val: .*$/m, `$1val: ${JSON.stringify(path.join(data, 'fortunes-byte-val.tok'))}`)
    .replace(/^(\s+)batch_size_per_gpu: .*$/m, '$1batch_size_per_gpu: 4')
    .replace(/^(\s+)max_steps: .*$/m, `$1max_steps: ${o.steps}`)
    .replace(/^(\s+)save_every_n_steps: .*$/m, '$1save_every_n_steps: 100000')
    .replace(/^(\s+)eval_every_n_steps: .*$/m, '$1eval_every_n_steps: 100000')
    .replace(/^(\s+)sharding_strategy: .*$/m, '$1sharding_strategy: FULL_SHARD')
    .replace(/^(\s+)target: .*$/m, `$1target: ${o.target ?? 'local'}`)
    .replace(/^(\s+)nproc_per_node: .*$/m, `$1nproc_per_node: 2\n$1slurm: ${JSON.stringify(slurm)}`);
  const configPath = path.join(dir, 'on-slurm.yaml');
  writeFileSync(configPath, text);
  const { config, problems } = loadRunConfig(text, configPath);
  assert.ok(config, JSON.stringify(problems));
  assert.ok(config.launch.slurm, 'launch.slurm is set');
  return { configPath, config };
}
