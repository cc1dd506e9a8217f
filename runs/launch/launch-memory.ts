// The memory estimate shown before a person's own command is launched: the estimator's (core/memory,
// as the config shows it inline) for the DeepSpeed or accelerate config the launch spec names, or
// that the command's own options name (--config_file, --deepspeed).
import path from 'node:path';
import type { ResolvedLaunchSpec } from '../../core/config/launch-spec';
import { recogniseConfig } from '../../core/config/document-kind';
import { configMemory, type TargetDefaults } from '../../core/memory/config-memory';
import { findModelName, hfModelSource } from '../../core/memory/inputs/hf-model';
import type { ModelSource } from '../../core/memory/inputs/model-from-options';
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
  const m = configMemory(kind, text, named, defaults, commandModelSource(spec, named));
  const name = path.basename(named);
  if ('error' in m) return { text: `${name}: no memory estimate (${m.error})`, doesNotFit: false };
  if (m.askModel)
    return {
      text: `${name}: no memory estimate: which model? ${m.askModel.why} (name it with --model_name_or_path in the command, or choose it at the config's hint)`,
      doesNotFit: false,
    };
  return { text: m.problem ? `${name}: ${m.problem.message}` : `${name}: ${m.detail}`, doesNotFit: !!m.problem };
}

/** Models found from the config's folder, with the one the launch command names (--model_name_or_path) first. */
function commandModelSource(spec: ResolvedLaunchSpec, config: string): ModelSource {
  const files = hfModelSource(config);
  const inCommand = findModelName(spec.command.argv.join(' '));
  return { ...files, named: () => (inCommand ? { ref: inCommand.ref, where: 'the launch command' } : files.named()) };
}
