// Issue 41's frozen owners and two ends, on real processes: a process of the run stopped (SIGSTOP)
// — mpirun, the supervisor, the fsdp-train under it — is noticed once it has been stopped for
// FSDP_STUDIO_FROZEN_AFTER_S (short here), and the run ends naming it, nothing of it left; the
// supervisor or mpirun killed outright ends the run once, naming what died.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { until, untilValue } from '../harness/until';
import { eventsOf, rankPidsOf, readRun, smallConfig, startTrain, tempDir, train, writeConfig } from './train-runs';
import { childrenOf, commandOf } from '../harness/proc';
import { SUPERVISOR, VENV_PYTHON } from '../harness/pytorch';
import { startingManifest } from '../harness/run-owner-argv';

/** Short, so that the test is quick; the default is stated in supervise.py (frozen.py). */
const FROZEN_AFTER_S = '2';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A zombie has ended; only its parent has not reaped it yet.
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** Every process of a run: its supervisor (the group's leader) and everything below it, mpirun's ranks included. */
function processesOf(supervisor: number): number[] {
  const out = [supervisor];
  for (let i = 0; i < out.length; i++) out.push(...childrenOf(out[i]));
  return out;
}

interface Started {
  runDir: string;
  /** The run's config (a resume starts from it). */
  config: string;
  supervisor: number;
  /** fsdp-train --supervised, the process the supervisor started. */
  launcher: number;
  /** mpirun, for a job of several ranks. */
  mpirun?: number;
  everything: number[];
  done: Promise<{ code: number | null; stderr: string }>;
}

describe("a run's frozen or killed owners (issue 41)", function () {
  this.timeout(240_000);
  let dir: string;
  let left: number[] = [];
  beforeEach(() => (dir = tempDir('run-frozen')));
  afterEach(() => {
    // Whatever a failed test left: thawed and killed.
    for (const pid of left.splice(0))
      for (const sig of ['SIGCONT', 'SIGKILL'] as const)
        try {
          process.kill(pid, sig);
        } catch {
          // gone
        }
    rmSync(dir, { recursive: true, force: true });
  });

  /** A run that goes on until it is ended, started as the editor starts one; once it has taken a step. */
  async function startRun(nproc: number): Promise<Started> {
    const runDir = path.join(dir, 'run');
    const config = writeConfig(
      dir,
      smallConfig({
        training: { max_steps: 100_000 },
        fsdp: { sharding_strategy: nproc > 1 ? 'FULL_SHARD' : 'NO_SHARD' },
        launch: { threads_per_rank: 1 },
      }),
    );
    let stepSeen: () => void = () => undefined;
    const firstStep = new Promise<void>((resolve) => (stepSeen = resolve));
    const { done } = startTrain(
      [config, '--nproc', String(nproc), '--run-dir', runDir],
      (line) => {
        if (line.includes('"type":"step"')) stepSeen();
      },
      { detached: true, env: { FSDP_STUDIO_FROZEN_AFTER_S: FROZEN_AFTER_S } },
    );
    await firstStep;
    const { manifest } = await readRun(runDir);
    const supervisor = manifest.pgid!; // the owner leads the run's process group
    const launcher = childrenOf(supervisor).find((pid) => commandOf(pid).includes('--supervised'));
    assert.ok(launcher, `the supervisor ${supervisor} runs fsdp-train --supervised`);
    const mpirun = nproc > 1 ? childrenOf(launcher).find((pid) => /^\S*mpirun /.test(commandOf(pid))) : undefined;
    if (nproc > 1) assert.ok(mpirun, `fsdp-train ${launcher} runs mpirun: ${childrenOf(launcher).map(commandOf)}`);
    const ranks = rankPidsOf(runDir);
    assert.equal(ranks.length, nproc, JSON.stringify(ranks));
    const everything = [...new Set([...processesOf(supervisor), ...ranks])];
    left = everything;
    return { runDir, config, supervisor, launcher, mpirun, everything, done };
  }

  /** The run's one end (metrics.jsonl and run.json agree), once every process of it is gone. */
  async function endOf(run: Started): Promise<string> {
    await until('every process of the run has ended', () => run.everything.every((pid) => !alive(pid)), 120_000);
    const { events, manifest } = await readRun(run.runDir);
    const ends = eventsOf(events, 'run_end');
    assert.ok(ends.length <= 1, `one end per attempt: ${JSON.stringify(ends)}`);
    assert.equal(manifest.status, 'failed', JSON.stringify(manifest));
    const reason = (manifest as { end_reason?: string }).end_reason ?? '';
    if (ends.length === 1) assert.equal(ends[0].reason, reason, 'run.json says the end metrics.jsonl says');
    return reason;
  }

  it('ends a 2-rank job whose mpirun is stopped, naming mpirun, with nothing left', async () => {
    const run = await startRun(2);
    process.kill(run.mpirun!, 'SIGSTOP');
    assert.match(await endOf(run), new RegExp(`^mpirun \\(pid ${run.mpirun}\\) was stopped \\(SIGSTOP\\) for`));
  });

  it('ends a run whose supervisor is stopped, naming the supervisor, with nothing left', async () => {
    const run = await startRun(1);
    process.kill(run.supervisor, 'SIGSTOP');
    assert.match(await endOf(run), new RegExp(`its supervisor \\(pid ${run.supervisor}\\) was stopped \\(SIGSTOP\\)`));
  });

  it('ends a run whose fsdp-train is stopped, naming it, with nothing left', async () => {
    const run = await startRun(1);
    process.kill(run.launcher, 'SIGSTOP');
    assert.match(await endOf(run), new RegExp(`^fsdp-train \\(pid ${run.launcher}\\) was stopped \\(SIGSTOP\\) for`));
  });

  for (const nproc of [1, 2])
    it(`ends a run of ${nproc} rank${nproc > 1 ? 's' : ''} whose supervisor is killed once, naming the supervisor`, async () => {
      const run = await startRun(nproc);
      process.kill(run.supervisor, 'SIGKILL');
      const reason = await endOf(run);
      assert.match(reason, new RegExp(`its supervisor \\(pid ${run.supervisor}\\) was killed`));
      assert.equal(eventsOf((await readRun(run.runDir)).events, 'run_end').length, 1);
    });

  it('ends a 2-rank job whose mpirun is killed, naming mpirun', async () => {
    const run = await startRun(2);
    process.kill(run.mpirun!, 'SIGKILL');
    assert.match(
      await endOf(run),
      new RegExp(`mpirun \\(pid ${run.mpirun}, the job's launcher\\) was killed by SIGKILL`),
    );
  });
  it("a run whose supervisor and guard are both killed: the next attempt merges what the dead one's writers left, ends it once, then starts", async () => {
    const run = await startRun(2);
    const guard = childrenOf(run.supervisor).find((pid) => commandOf(pid).includes('--guard-of-supervisor'));
    assert.ok(guard, `the supervisor ${run.supervisor} has a guard: ${childrenOf(run.supervisor).map(commandOf)}`);
    const dead = (await readRun(run.runDir)).manifest.attempt!.id;
    const deadFile = path.join(run.runDir, 'events', dead, 'runtime.jsonl');
    const metrics = path.join(run.runDir, 'metrics.jsonl');
    await until(
      'the owner has named the attempt’s processes in the stream',
      () => existsSync(metrics) && readFileSync(metrics, 'utf8').includes('"type":"processes"'),
      60_000,
    );
    process.kill(run.supervisor, 'SIGKILL');
    process.kill(guard, 'SIGKILL');
    await until('the supervisor and its guard are gone', () => !alive(run.supervisor) && !alive(guard), 60_000);
    // Nobody merges the runtime's file any more: a line it writes from now on must still reach the
    // stream. (The supervisor may have merged the last line there before it was killed: wait for the
    // runtime, which goes on training, to write one the stream lacks — seen under load.)
    const lastWholeLine = () => {
      const written = readFileSync(deadFile, 'utf8');
      const whole = written.slice(0, written.lastIndexOf('\n') + 1);
      return whole.slice(whole.lastIndexOf('\n', whole.length - 2) + 1);
    };
    const lastWritten = await untilValue(
      'the runtime to write a line nobody merged',
      async () => {
        const line = lastWholeLine();
        return line && !readFileSync(metrics, 'utf8').includes(line) ? line : '';
      },
      (line) => line !== '',
      60_000,
      50,
    );
    assert.match(lastWritten, /^\{.*\}\n$/, 'a whole line the runtime wrote');
    const resumeConfig = writeConfig(
      dir,
      smallConfig({
        training: { max_steps: 3 },
        fsdp: { sharding_strategy: 'FULL_SHARD' },
        launch: { threads_per_rank: 1 },
      }),
      'resume.json',
    );
    const r = await train([resumeConfig, '--nproc', '2', '--run-dir', run.runDir, '--resume', 'never']);
    assert.equal(r.code, 0, r.stderr);
    await until('nothing of the dead attempt still runs', () => run.everything.every((pid) => !alive(pid)), 60_000);
    const { events, problems, manifest } = await readRun(run.runDir);
    assert.deepEqual(problems, [], 'every line of metrics.jsonl is a whole event');
    const bounds = events
      .filter((e) => e.type === 'run_start' || e.type === 'run_end')
      .map((e) => [e.type, (e as { attempt?: string }).attempt]);
    const now = manifest.attempt!.id;
    assert.notEqual(now, dead);
    assert.deepEqual(bounds, [
      ['run_start', dead],
      ['run_end', dead],
      ['run_start', now],
      ['run_end', now],
    ]);
    const [deadEnd, end] = eventsOf(events, 'run_end');
    assert.equal(deadEnd.stand_in, true, JSON.stringify(deadEnd));
    assert.match(
      deadEnd.reason ?? '',
      new RegExp(`its supervisor \\(pid ${run.supervisor}\\) and its guard \\(pid ${guard}\\) were killed`),
    );
    assert.equal(end.status, 'completed');
    assert.equal(manifest.status, 'completed');
    const text = readFileSync(metrics, 'utf8');
    const endAt = text.indexOf('"type":"run_end"');
    assert.ok(
      text.indexOf(lastWritten) >= 0 && text.indexOf(lastWritten) < endAt,
      'the dead runtime’s lines before its end',
    );
    assert.equal(existsSync(path.join(run.runDir, 'events')), false, 'no per-writer file left');
  });
  it('ends a run whose supervisor hangs (alive, not stopped) writing to an output its launcher stopped reading, naming it', async () => {
    // The launcher (this test) reads none of the supervisor's stderr. The command writes more to
    // stderr than the pipes hold, so the supervisor's copy of it blocks; once the command is stopped
    // (SIGSTOP), the supervisor's own line naming it blocks too, before it kills it: it never polls again.
    const runDir = path.join(dir, 'hung');
    mkdirSync(runDir, { recursive: true });
    writeFileSync(path.join(runDir, 'run.json'), JSON.stringify(startingManifest('hung', { kind: 'command' })));
    const chatty =
      "import signal, sys\nsys.stderr.write('a warning nobody reads\\n' * 50000)\nsys.stderr.flush()\nsignal.pause()\n";
    const owner = spawn(VENV_PYTHON, [SUPERVISOR, '--run-dir', runDir, '--', VENV_PYTHON, '-c', chatty], {
      detached: true,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, FSDP_STUDIO_FROZEN_AFTER_S: '1', FSDP_STUDIO_HUNG_AFTER_S: '3' },
    });
    owner.stderr!.pause();
    const supervisor = owner.pid!;
    const exited = new Promise<void>((resolve) => owner.on('exit', () => resolve()));
    left = [supervisor];
    let command = 0;
    await until(
      'the command is blocked writing to its stderr',
      () => {
        command = childrenOf(supervisor).find((pid) => commandOf(pid).includes('nobody reads')) ?? 0;
        return command > 0 && /pipe_write/.test(readFileSync(`/proc/${command}/wchan`, 'utf8'));
      },
      60_000,
    );
    const guard = childrenOf(supervisor).find((pid) => commandOf(pid).includes('--guard-of-supervisor'));
    assert.ok(guard, 'the supervisor has a guard');
    left = [supervisor, command, guard];
    process.kill(command, 'SIGSTOP');
    await exited;
    await until('nothing of the run is left', () => left.every((pid) => !alive(pid)), 60_000);
    const { events, manifest } = await readRun(runDir);
    const ends = eventsOf(events, 'run_end');
    assert.equal(ends.length, 1, JSON.stringify(ends));
    assert.equal(manifest.status, 'failed');
    assert.match(
      ends[0].reason ?? '',
      new RegExp(`^its supervisor \\(pid ${supervisor}\\) ran but did not poll for 3 s \\(FSDP_STUDIO_HUNG_AFTER_S\\)`),
    );
    assert.equal((manifest as { end_reason?: string }).end_reason, ends[0].reason);
  });
});
