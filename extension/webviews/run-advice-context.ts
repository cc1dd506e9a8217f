// The advice context of a watched run (core/runs/run-advice.ts): a native run's resolved config,
// or a person's command with its framework — read from the training script's imports when the
// script is on this machine (Trainer, Lightning, accelerate), else from the launcher alone.
import { closeSync, openSync, readSync } from 'node:fs';
import path from 'node:path';
import { readCommand } from '../../core/config/user-command';
import { nonFiniteAtEnd, type NonFiniteEnd } from '../../core/runs/nonfinite-scalars';
import { adviceContext, type AdviceContext } from '../../core/runs/run-advice';
import { FORMAT_NAMES } from '../../runs/watch/decoders/printed/recognisers';
import type { RunRecord } from '../../runs/watch/run-registry';
import type { RunWatch } from '../../runs/watch/run-watch';

const MAX_SCRIPT_BYTES = 2 * 2 ** 20;

/** A command run's context, once its manifest is read: the views ask on every frame, the script is read once. */
const commandAdvice = new WeakMap<RunWatch, AdviceContext>();

/** `record`: the registry's entry for the run, where the caller has it (else the watch's own target and manifest). */
export function runAdvice(record: RunRecord | undefined, watch: RunWatch): AdviceContext {
  const manifest = watch.manifest;
  if (manifest?.kind !== 'command')
    return adviceContext(manifest?.kind, watch.history.start?.config ?? manifest?.config);
  const known = commandAdvice.get(watch);
  if (known) return known;
  const config = manifest.config as { command?: unknown; cwd?: unknown };
  let scriptText: string | undefined;
  if (
    (record?.target ?? watch.ref.target) === 'local' &&
    Array.isArray(config.command) &&
    config.command.every((w) => typeof w === 'string') &&
    config.command.length
  ) {
    const script = readCommand(config.command as string[]).script;
    const cwd =
      typeof config.cwd === 'string' ? config.cwd : path.dirname(record?.configPath ?? manifest.config_path ?? '.');
    if (script) scriptText = readSmall(path.resolve(cwd, script));
  }
  const ctx = adviceContext('command', config, scriptText);
  commandAdvice.set(watch, ctx);
  return ctx;
}

/**
 * The metric the run ends with as NaN or Inf, if any (core/runs/nonfinite-scalars.ts), said in the
 * Hugging Face Trainer's terms when the run is the Trainer's: its script imports it, or it prints
 * the Trainer's log dicts.
 */
export function runNonFinite(watch: RunWatch, record?: RunRecord): NonFiniteEnd | undefined {
  const end = nonFiniteAtEnd(watch.history);
  if (end?.metric !== 'grad_norm' || watch.history.step.loss.length === 0) return end;
  const hfTrainer =
    watch.history.printed?.format === FORMAT_NAMES['hf-trainer'] ||
    (watch.manifest?.kind === 'command' && runAdvice(record, watch).framework === 'hf-trainer');
  return hfTrainer ? nonFiniteAtEnd(watch.history, true) : end;
}

/** The script's first MAX_SCRIPT_BYTES (its imports are at the top), or undefined when it cannot be read. */
function readSmall(file: string): string | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    const buf = Buffer.alloc(MAX_SCRIPT_BYTES);
    const n = readSync(fd, buf, 0, MAX_SCRIPT_BYTES, 0);
    return buf.subarray(0, n).toString('utf8');
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
