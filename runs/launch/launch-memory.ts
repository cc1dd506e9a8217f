// The memory estimate shown before a person's own command is launched: the estimator's (core/memory,
// as the config shows it inline) for the DeepSpeed or accelerate config the launch spec names, or
// that the command's own options name (--config_file, --deepspeed).
import path from 'node:path';
import type { ResolvedLaunchSpec } from '../../core/config/launch-spec';
import { recogniseConfig } from '../../core/config/document-kind';
import { configMemory, type TargetDefaults } from '../../core/memory/config-memory';
import { launchConfigPath } from './launch-world';

export interface LaunchMemoryNote {
  /** "ds_config.json: ≈ 23.4 GiB / GPU (…) — fits H100 80GB", or why it does not fit. */
  text: string;
  doesNotFit: boolean;
}

export function launchMemoryNote(
  spec: ResolvedLaunchSpec,
  readFile: (file: string) => string | undefined,
  defaults: TargetDefaults,
): LaunchMemoryNote | undefined {
  const named = launchConfigPath(spec);
  const text = named ? readFile(named) : undefined;
  if (!named || text === undefined) return undefined;
  const kind = recogniseConfig(named, text);
  if (kind !== 'deepspeed' && kind !== 'accelerate' && kind !== 'run-config') return undefined;
  const m = configMemory(kind, text, named, defaults);
  const name = path.basename(named);
  if ('error' in m) return { text: `${name}: no memory estimate (${m.error})`, doesNotFit: false };
  return { text: m.problem ? `${name}: ${m.problem.message}` : `${name}: ${m.title}`, doesNotFit: !!m.problem };
}
