// How many ranks a run has, in the words the dashboard's header and the start toast both use, and
// where the number comes from: the command's options (run.json's world as the editor wrote it), the
// ranks that started (the supervisor counted them into run.json: counted "ranks"), or — before they
// start, where the command does not say (deepspeed without --num_gpus) — what decides it. Ranks named
// by the run's own events (more than run.json says) are counted too, and said so.
import { commandWorld } from '../config/command-world';
import { readCommand } from '../config/user-command';
import type { ManifestWorld } from '../generated/run-manifest';

export interface WorldWords {
  /** "2 ranks", or what decides them ("all GPUs of the host"). */
  count: string;
  /** Where the count comes from, when not simply the command's options. */
  source?: string;
}

const ranks = (n: number) => `${n} rank${n === 1 ? '' : 's'}`;

/**
 * `world`: run.json's; `command`: the run's argument vector (what decides an uncounted world);
 * `reported`: how many distinct ranks the run's events named so far.
 */
export function worldWords(world: ManifestWorld, command: readonly string[] | undefined, reported = 0): WorldWords {
  if (world.counted === 'ranks')
    return {
      count: ranks(Math.max(world.size, reported)),
      source: `counted from the ranks that started${world.command_size !== undefined ? `; the command says ${world.command_size}` : ''}`,
    };
  if (world.counted === 'launcher') {
    if (reported > 0) return { count: ranks(reported), source: 'counted from the ranks that reported so far' };
    const c = command?.length ? commandWorld(readCommand([...command]), { nproc: 1, env: {}, cwd: '/' }) : undefined;
    return { count: c?.decidedBy ?? "the launcher's count", source: 'counted when the ranks report' };
  }
  if (reported > world.size)
    return { count: ranks(reported), source: `counted from the ranks that reported; the command says ${world.size}` };
  return { count: ranks(world.size) };
}

/** One line: "2 ranks (torchrun; counted from the ranks that started; the command says 1)". */
export function worldLine(words: WorldWords, launcher?: string): string {
  const notes = [launcher, words.source].filter(Boolean);
  return `${words.count}${notes.length ? ` (${notes.join('; ')})` : ''}`;
}
