// Before a person's own command starts with a DeepSpeed or accelerate config: how many ranks the
// command starts against how many the config implies (core/config/launch-world-size.ts, which the
// editor also checks as you type), refused with both numbers when they differ, and the one-line account of what will run that the editor
// shows for review before a launch it wrote itself.
import path from 'node:path';
import type { ConfigWorldSize } from '../../core/config/config-world-size';
import { configFileWorldSize, worldSizeMismatch } from '../../core/config/launch-world-size';
import type { ResolvedLaunchSpec } from '../../core/config/launch-spec';
import { decidedByWords } from '../../core/config/command-world';

/** The config the spec names (`config:`), or that the command's own options name (--deepspeed, --config_file) on this machine. */
export function launchConfigPath(spec: ResolvedLaunchSpec): string | undefined {
  return (
    spec.config ??
    (spec.command.configFile && spec.target === 'local' ? path.resolve(spec.cwd, spec.command.configFile) : undefined)
  );
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
  return worldSizeMismatch(launchConfigPath(spec), spec.worldSize, spec.command.launcher, readFile);
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
  // accelerate launch without --num_processes takes the config's count; deepspeed without --num_gpus every GPU of the host.
  const fromConfig = spec.worldSize === undefined && spec.command.launcher === 'accelerate' && implied;
  const ranks =
    spec.worldSize !== undefined
      ? count(spec.worldSize)
      : fromConfig
        ? `${count(implied.size)} (the config's ${implied.why})`
        : decidedByWords(spec.worldDecidedBy ?? 'the launcher');
  const config =
    implied && !fromConfig ? `; ${path.basename(implied.config)} implies ${implied.size} (${implied.why})` : '';
  return `${spec.command.argv.join(' ')} — ${ranks} ${where}${config}`;
}
