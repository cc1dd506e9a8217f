// What the e2e tests compare a dashboard's loss chart with: the run's metrics.jsonl read line by
// line on its own (not through the extension's reader, which is part of what is under test).
import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The loss of each step as the trainer wrote it: rank 0's (or the whole run's), the last write of a
 * step winning, and steps after a restart's start_step dropped, as the protocol says.
 */
export function lossesWritten(runDir: string): Map<number, number | null> {
  const out = new Map<number, number | null>();
  for (const line of readFileSync(path.join(runDir, 'metrics.jsonl'), 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const e = JSON.parse(line) as {
      type: string;
      step?: number;
      loss?: number | null;
      start_step?: number;
      rank?: number;
    };
    if (e.type === 'run_start' && e.start_step !== undefined)
      for (const s of [...out.keys()]) if (s > e.start_step) out.delete(s);
    if (e.type === 'step' && (e.rank ?? 0) === 0) out.set(e.step!, e.loss ?? null);
  }
  return out;
}
