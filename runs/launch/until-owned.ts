// A detached launch returns once the run's owner — the supervisor — has written run.json naming
// itself first: until then a resumed run's folder still holds the last run's run.json (an ended
// run), and an owner that could not start at all (no python3 on the host) would leave no run.json
// and no word. That one fails the launch with what the start printed.
import type { RunMachine } from '../machines/run-machine';
import type { LaunchedRun } from './launcher';

/** How long an owner that is alive gets to write run.json before the launch returns without it. */
const OWNED_WITHIN_MS = 30_000;
const LOOK_EVERY_MS = 150;

export async function untilOwned(machine: RunMachine, run: LaunchedRun, withinMs = OWNED_WITHIN_MS): Promise<void> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const manifest = await machine.readManifest(run.runDir).catch(() => undefined);
    if (manifest?.pids?.[0] === run.pid) return;
    if ((await machine.isAlive(run.pgid)) === false) {
      // Gone without a word in run.json: say what it printed (a missing python3, a bad path).
      const tail = await machine.readFile(`${run.runDir}/stderr.log`, 4096, true).catch(() => Buffer.alloc(0));
      const said = tail.toString('utf8').trim().split('\n').slice(-3).join(' / ');
      const again = await machine.readManifest(run.runDir).catch(() => undefined);
      if (again?.pids?.[0] === run.pid) return;
      throw new Error(
        `the run's owner (${run.argv[0]}, pid ${run.pid}) ended before it wrote ${run.runDir}/run.json${said ? `: ${said}` : ''}`,
      );
    }
    if (Date.now() > deadline) return;
    await new Promise((r) => setTimeout(r, LOOK_EVERY_MS));
  }
}
