// Before a person's own command starts with a DeepSpeed or accelerate config: how many ranks the
// command starts against how many the config implies (core/config/config-world-size.ts), refused
// with both numbers when they differ, and the one-line account of what will run that the editor
// shows for review before a launch it wrote itself.
import path from 'node:path';
import { configWorldSize, type ConfigWorldSize } from '../../core/config/config-world-size';
import { recogniseConfig } from '../../core/config/document-kind';
import type { ResolvedLaunchSpec } from '../../core/config/launch-spec';

/** The config the spec names (`config:`), or that the command's own options name (--deepspeed, --config_file) on this machine. */
export function launchConfigPath(spec: ResolvedLaunchSpec): string | undefined {
  return (
    spec.config ??
    (spec.command.configFile && spec.target === 'local' ? path.resolve(spec.cwd, spec.command.configFile) : undefined)
  );
}

/** The world size a DeepSpeed or accelerate config file implies, if its keys say. */
export function configFileWorldSize(
  file: string,
  readFile: (file: string) => string | undefined,
): (ConfigWorldSize & { config: string }) | undefined {
  const text = readFile(file);
  if (text === undefined) return undefined;
  const kind = recogniseConfig(file, text);
  if (kind !== 'deepspeed' && kind !== 'accelerate') return undefined;
  const implied = configWorldSize(kind, text, file);
  return implied && { ...implied, config: file };
}

/** The world size the spec's DeepSpeed or accelerate config implies, if it has one that says. */
export function impliedWorldSize(
  spec: ResolvedLaunchSpec,
  readFile: (file: string) => string | undefined,
): (ConfigWorldSize & { config: string }) | undefined {
  const file = launchConfigPath(spec);
  return file ? configFileWorldSize(file, readFile) : undefined;
}

/** Why the command's ranks and its config's disagree, or undefined when they agree or either is not known. */
export function launchWorldProblem(
  spec: ResolvedLaunchSpec,
  readFile: (file: string) => string | undefined,
): string | undefined {
  const implied = impliedWorldSize(spec, readFile);
  const started = spec.worldSize;
  if (!implied || started === undefined || started === implied.size) return undefined;
  const name = path.basename(implied.config);
  const { launcher } = spec.command;
  const ranks = (n: number) => `${n} rank${n === 1 ? '' : 's'}`;
  const head = `${name} implies ${ranks(implied.size)} (${implied.why}), but the command starts ${ranks(started)}`;
  if (launcher === 'deepspeed')
    return `${head} (--num_gpus × --num_nodes): DeepSpeed stops at start-up when train_batch_size ≠ micro-batch × accumulation × ranks. Change --num_gpus in the command, or the batch keys in ${name}.`;
  if (launcher === 'accelerate')
    return `${head} (--num_processes, which overrides the config's): change --num_processes in the command, or num_processes in ${name}.`;
  return `${head}: make them agree.`;
}

/** What will run, for review: the command, its ranks and where, and the config's own count. */
export function describeLaunch(spec: ResolvedLaunchSpec, readFile: (file: string) => string | undefined): string {
  const implied = impliedWorldSize(spec, readFile);
  const where = spec.slurm
    ? `as a SLURM job from ${spec.target === 'local' ? 'this machine' : spec.target}`
    : spec.target === 'local'
      ? 'on this machine'
      : `on ${spec.target}`;
  const count = (n: number) => `${n} rank${n === 1 ? '' : 's'}`;
  // accelerate launch without --num_processes takes the config's count; deepspeed without --num_gpus every GPU it finds.
  const fromConfig = spec.worldSize === undefined && spec.command.launcher === 'accelerate' && implied;
  const ranks =
    spec.worldSize !== undefined
      ? count(spec.worldSize)
      : fromConfig
        ? `${count(implied.size)} (the config's ${implied.why})`
        : 'as many ranks as the launcher finds GPUs';
  const config =
    implied && !fromConfig ? `; ${path.basename(implied.config)} implies ${implied.size} (${implied.why})` : '';
  return `${spec.command.argv.join(' ')} — ${ranks} ${where}${config}`;
}
