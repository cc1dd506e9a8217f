// A detached launch returns once the run's owner — the supervisor — has written run.json naming
// itself first: until then a resumed run's folder still holds the last run's run.json (an ended
// run), and an owner that could not start at all (no python3 on the host) would leave no run.json
// and no word. That one fails the launch with what the start printed; so does one that is still
// alive but has not named itself in time (a python3 that hangs), which is then stopped rather
// than left to start a run no one is told of.
import type { RunMachine } from '../machines/run-machine';
import type { LaunchedRun } from './launcher';

/** How long an owner that is alive gets to write run.json before the launch fails. */
const OWNED_WITHIN_MS = 30_000;
const LOOK_EVERY_MS = 150;

export async function untilOwned(machine: RunMachine, run: LaunchedRun, withinMs = OWNED_WITHIN_MS): Promise<void> {
  const deadline = Date.now() + withinMs;
  const named = async () => (await machine.readManifest(run.runDir).catch(() => undefined))?.pids?.[0] === run.pid;
  // What the owner printed (a missing python3, a bad path, a Python too old): the last lines of
  // its stderr, else of its stdout.
  const said = async () => {
    for (const log of ['stderr.log', 'stdout.log']) {
      const tail = await machine.readFile(`${run.runDir}/${log}`, 4096, true).catch(() => Buffer.alloc(0));
      const text = tail.toString('utf8').trim();
      const lines = text.split('\n').slice(-3).join(' / ');
      // The companion's own code failing to parse: the Python that ran it is too old (Python 2
      // says "no encoding declared" of its first non-ASCII character; 3.8 and older, invalid syntax).
      const last = text.split('\n').slice(-5).join('\n');
      const tooOld = /SyntaxError/.test(last) && /fsdp_studio/.test(last);
      const hint = tooOld
        ? ` (${run.argv[0]} is older than the Python 3.9 FSDP Studio's supervisor needs: name a newer one in the launch spec's python: key)`
        : '';
      if (lines) return `: it printed ${JSON.stringify(lines)}${hint}`;
    }
    return ': it printed nothing';
  };
  const owner = `the run's owner (${run.argv[0]}, pid ${run.pid})`;
  for (;;) {
    if (await named()) return;
    if ((await machine.isAlive(run.pgid)) === false) {
      if (await named()) return;
      throw new Error(`${owner} ended before it wrote ${run.runDir}/run.json${await said()}`);
    }
    if (Date.now() > deadline) {
      if (await named()) return;
      const stopped = await stopOwner(machine, run);
      throw new Error(
        `${owner} did not start within ${Math.round(withinMs / 1000)} s (no run.json in ${run.runDir})${await said()}; ${stopped}`,
      );
    }
    await new Promise((r) => setTimeout(r, LOOK_EVERY_MS));
  }
}

/** Ends an owner that never named itself: its group, once vetted as the run's (run-group.ts). */
async function stopOwner(machine: RunMachine, run: LaunchedRun): Promise<string> {
  try {
    const check = await machine.checkRunGroup({ pgid: run.pgid, runId: run.runId });
    if (check.verdict === 'gone') return 'it has ended since';
    if (check.verdict === 'refused') return `it was not stopped (${check.reason})`;
    await machine.signal(run.pgid, 'SIGKILL');
    return 'it was stopped';
  } catch (e) {
    return `it could not be stopped (${(e as Error).message})`;
  }
}
