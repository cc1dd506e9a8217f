// samples/tiny-cpu.yaml made into a small run for the launch tests, written into a folder: the
// sample data by absolute path, batch 4, no periodic checkpoints or evaluations (a stop saves one),
// the sharding and launch section each test needs; loaded as the editor loads it.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadRunConfig } from '../../core/config/run-config';
import type { ConfigProblem } from '../../core/config/schema-problems';
import type { LaunchRequest } from '../../runs/launch/launcher';
import { repoRoot } from '../../scripts/code-server';

export interface SampleRunOptions {
  name: string;
  steps: number;
  sharding: string;
  /** Rewrites the launch section of the YAML text (its lines keep the sample's indentation). */
  launch: (text: string) => string;
}

export function sampleRunConfig(dir: string, o: SampleRunOptions): LaunchRequest & { problems: ConfigProblem[] } {
  const data = path.join(repoRoot, 'samples', 'data');
  const text = o.launch(
    readFileSync(path.join(repoRoot, 'samples', 'tiny-cpu.yaml'), 'utf8')
      .replace(/^name: .*$/m, `name: ${o.name}`)
      .replace(/^(\s+)train: .*$/m, `$1train: ${JSON.stringify(path.join(data, 'fortunes-byte-train.tok'))}`)
      .replace(/^(\s+)val: .*$/m, `$1val: ${JSON.stringify(path.join(data, 'fortunes-byte-val.tok'))}`)
      .replace(/^(\s+)batch_size_per_gpu: .*$/m, '$1batch_size_per_gpu: 4')
      .replace(/^(\s+)max_steps: .*$/m, `$1max_steps: ${o.steps}`)
      .replace(/^(\s+)save_every_n_steps: .*$/m, '$1save_every_n_steps: 100000')
      .replace(/^(\s+)eval_every_n_steps: .*$/m, '$1eval_every_n_steps: 100000')
      .replace(/^(\s+)sharding_strategy: .*$/m, `$1sharding_strategy: ${o.sharding}`),
  );
  const configPath = path.join(dir, `${o.name}.yaml`);
  writeFileSync(configPath, text);
  const { config, problems } = loadRunConfig(text, configPath);
  assert.ok(config, JSON.stringify(problems));
  return { configPath, config, problems };
}
