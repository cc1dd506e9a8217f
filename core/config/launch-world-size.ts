// Whether the ranks a launch's command starts agree with the ranks its DeepSpeed or accelerate
// config implies (config-world-size.ts): said as you type a launch spec (launch-spec.ts) and again,
// refusing, when it is launched (runs/launch/launch-world.ts) — one wording for both.
import path from 'node:path';
import { configWorldSize, type ConfigWorldSize } from './config-world-size';
import { recogniseConfig } from './document-kind';
import type { UserCommand } from './user-command';

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

/**
 * Why the `started` ranks of a command and those its config file implies disagree, or undefined
 * when they agree or either is not known.
 */
export function worldSizeMismatch(
  configFile: string | undefined,
  started: number | undefined,
  launcher: UserCommand['launcher'],
  readFile: (file: string) => string | undefined,
): string | undefined {
  const implied = configFile ? configFileWorldSize(configFile, readFile) : undefined;
  if (!implied || started === undefined || started === implied.size) return undefined;
  const name = path.basename(implied.config);
  const ranks = (n: number) => `${n} rank${n === 1 ? '' : 's'}`;
  const head = `${name} implies ${ranks(implied.size)} (${implied.why}), but the command starts ${ranks(started)}`;
  if (launcher === 'deepspeed')
    return `${head} (--num_gpus × --num_nodes): DeepSpeed stops at start-up when train_batch_size ≠ micro-batch × accumulation × ranks. Change --num_gpus in the command, or the batch keys in ${name}.`;
  if (launcher === 'accelerate')
    return `${head} (--num_processes, which overrides the config's): change --num_processes in the command, or num_processes in ${name}.`;
  return `${head}: make them agree.`;
}
