// How long a step of a test took is a figure for a benchmark, never a verdict: a loaded machine makes
// any step slow, and a test that fails because the machine is busy is one nobody trusts (issue 38,
// item 2). A test says what must hold as a condition and hands its durations here; they go to the
// file $FSDP_TEST_DURATIONS names (one JSON object a line), which `npm run bench:test-durations`
// sets and summarises. Without it they are dropped: a plain test run writes nothing extra.
import { appendFileSync } from 'node:fs';
import os from 'node:os';

export interface TestDuration {
  /** What was timed, e.g. "hardening-cli: refusal of 3 ranks on 2 cores". */
  what: string;
  ms: number;
  /** The 1-minute load when it ended, so a slow figure can be told from a busy machine. */
  load1m: number;
}

/** Records a duration measured elsewhere (by the runtime, say), in milliseconds. */
export function recordMs(what: string, ms: number): void {
  const file = process.env.FSDP_TEST_DURATIONS;
  if (!file) return;
  const line: TestDuration = { what, ms, load1m: +os.loadavg()[0].toFixed(2) };
  appendFileSync(file, JSON.stringify(line) + '\n');
}

/** Records how long `what` took; `startedAt` is a Date.now() taken before it began. */
export function recordDuration(what: string, startedAt: number): number {
  const ms = Date.now() - startedAt;
  recordMs(what, ms);
  return ms;
}

/** Runs `step`, records how long it took under `what`, and returns its value. */
export async function timed<T>(what: string, step: () => Promise<T>): Promise<T> {
  const startedAt = Date.now();
  try {
    return await step();
  } finally {
    recordDuration(what, startedAt);
  }
}
