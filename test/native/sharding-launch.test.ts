// How multi-process jobs start and stop: `fsdp-train --nproc N` runs mpirun itself; mpirun started
// by a person around the runtime (or around fsdp-train, as the editor's launcher does) trains the
// same; the all-reduce check "FSDP: Check environment" runs; a config whose world does not match
// the job is refused with a message that says what to change; SIGTERM to fsdp-train, or Ctrl-C to
// its whole process group, stops every rank after the same step with a checkpoint; and killing
// the launcher outright still ends the job.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { mpirunArgv } from '../../runs/launch/mpirun';
import { recordDuration } from '../harness/durations';
import { until, untilValue } from '../harness/until';
import { nativeCli, repoRoot } from './native-build';
import { eventsOf, readRun, startTrain, tempDir, train, writeConfig, type TrainResult } from './train-runs';
import { outcomeOf, runSharded, shardedConfig } from './sharding-runs';

const cliShim = path.join(repoRoot, 'bin', 'fsdp-train.mjs');

/** mpirun -n N as the runtime's own launcher builds it, around argv. */
function mpirun(n: number, argv: string[]): Promise<TrainResult> {
  const full = mpirunArgv({ nprocPerNode: n, nnodes: 1 }, argv, { asRoot: process.getuid?.() === 0 });
  return new Promise((resolve) => {
    const child = spawn(full[0], full.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

describe('multi-process jobs: starting, checking, refusing and stopping them', function () {
  this.timeout(300_000);
  let dir: string;
  before(() => (dir = tempDir('launch')));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('checks every collective across 4 ranks with --allreduce-check (what "FSDP: Check environment" runs)', async () => {
    const r = await mpirun(4, [nativeCli, '--allreduce-check']);
    assert.equal(r.code, 0, r.stderr);
    const result = JSON.parse(r.stdout.trim()) as {
      ok: boolean;
      world_size: number;
      hosts: string[];
      failures: string[];
      elements: number;
    };
    assert.deepEqual(result.failures, []);
    assert.equal(result.ok, true);
    assert.equal(result.world_size, 4);
    assert.equal(result.hosts.length, 4);
    assert.ok(result.elements >= 1 << 20);
  });

  it('trains the same under mpirun started by hand, around the runtime or around fsdp-train, as with --nproc', async () => {
    const viaNproc = await runSharded(dir, 'nproc', { ranks: 2, strategy: 'FULL_SHARD' });
    const expected = (await outcomeOf(viaNproc)).losses;
    // The resolved config fsdp-train wrote, run by mpirun directly.
    const byHand = path.join(dir, 'by-hand');
    const r = await mpirun(2, [nativeCli, '--config', path.join(viaNproc, 'config.json'), '--run-dir', byHand]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual((await outcomeOf(byHand)).losses, expected);
    // Every rank running the CLI (the editor's launcher does this), one run folder named for all.
    const config = writeConfig(dir, shardedConfig({ ranks: 2, strategy: 'FULL_SHARD' }), 'cli.json');
    const viaCli = path.join(dir, 'via-cli');
    const c = await mpirun(2, [process.execPath, cliShim, config, '--nproc', '2', '--run-dir', viaCli]);
    assert.equal(c.code, 0, c.stderr);
    assert.deepEqual((await outcomeOf(viaCli)).losses, expected);
    const { manifest } = await readRun(viaCli);
    assert.equal(manifest.status, 'completed');
    assert.deepEqual(manifest.world, { size: 2, nnodes: 1, nproc_per_node: 2 });
  });

  it('refuses a world that does not match the job, saying what to change', async () => {
    const one = writeConfig(dir, shardedConfig({ ranks: 1 }), 'one.json');
    const asked = await mpirun(2, [process.execPath, cliShim, one, '--run-dir', path.join(dir, 'mismatch')]);
    assert.notEqual(asked.code, 0);
    assert.match(asked.stderr, /launch\.nproc_per_node x launch\.nnodes is 1 but the job has 2 ranks/);
    const noRunDir = await mpirun(2, [process.execPath, cliShim, one, '--nproc', '2']);
    assert.equal(noRunDir.code, 2);
    assert.match(noRunDir.stderr, /started by mpirun or srun: give --run-dir/);
    // Two ranks asked for, one process started without mpirun.
    const direct = spawnSync(
      nativeCli,
      ['--config', path.join(dir, 'nproc', 'config.json'), '--run-dir', path.join(dir, 'direct')],
      { encoding: 'utf8' },
    );
    assert.equal(direct.status, 1);
    assert.match(direct.stderr, /not started by mpirun or srun: run npx fsdp-train --nproc 2 CONFIG/);
  });

  it('stops every rank after the same step on SIGTERM, with a checkpoint, exit code 143; the run resumes', async () => {
    const runDir = path.join(dir, 'stopped');
    const config = writeConfig(
      dir,
      shardedConfig({ ranks: 2, strategy: 'SHARD_GRAD_OP', extra: { training: { max_steps: 100000 } } }),
      'stop.json',
    );
    let sent = false;
    const { done } = startTrain([config, '--nproc', '2', '--run-dir', runDir], (line, child) => {
      if (sent || !line.includes('"type":"step"') || !line.includes('"step":3,')) return;
      sent = true;
      child.kill('SIGTERM');
    });
    const r = await done;
    assert.ok(sent, r.stderr);
    assert.equal(r.code, 143, r.stderr);
    const { events, manifest } = await readRun(runDir);
    const end = eventsOf(events, 'run_end').at(-1)!;
    assert.equal(end.status, 'stopped');
    const saved = eventsOf(events, 'checkpoint').at(-1)!;
    assert.equal(saved.step, end.step);
    assert.equal(manifest.status, 'stopped');
    // Both ranks stopped at the same step: each logged the same last step.
    const last = eventsOf(events, 'step')
      .filter((e) => e.rank !== undefined)
      .slice(-2);
    assert.deepEqual(
      last.map((e) => [e.rank, e.step]),
      [
        [0, end.step],
        [1, end.step],
      ],
    );
    const resumed = await train([
      config,
      '--nproc',
      '2',
      '--run-dir',
      runDir,
      '--resume',
      'auto',
      '--set',
      `training.max_steps=${end.step + 2}`,
    ]);
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.equal(eventsOf((await readRun(runDir)).events, 'run_start').at(-1)!.start_step, end.step);
  });

  it("stops every rank with a checkpoint when the whole process group gets the signal (Ctrl-C in a terminal, the editor's stop)", async () => {
    const runDir = path.join(dir, 'group-stopped');
    const config = writeConfig(
      dir,
      shardedConfig({ ranks: 2, strategy: 'FULL_SHARD', extra: { training: { max_steps: 100000 } } }),
      'group.json',
    );
    let sent = false;
    const { done } = startTrain(
      [config, '--nproc', '2', '--run-dir', runDir],
      (line, child) => {
        if (sent || !line.includes('"type":"step"') || !line.includes('"step":3,')) return;
        sent = true;
        // fsdp-train, mpirun and every rank receive it at once.
        process.kill(-child.pid!, 'SIGINT');
      },
      { detached: true },
    );
    const r = await done;
    assert.ok(sent, r.stderr);
    assert.equal(r.code, 130, r.stderr);
    const { events, manifest } = await readRun(runDir);
    const end = eventsOf(events, 'run_end').at(-1)!;
    assert.equal(end.status, 'stopped');
    assert.equal(eventsOf(events, 'checkpoint').at(-1)!.step, end.step);
    assert.equal(manifest.status, 'stopped');
  });

  it('ends the job when its launcher is killed outright, saying so in run.json', async () => {
    const runDir = path.join(dir, 'orphaned');
    const config = writeConfig(
      dir,
      shardedConfig({ ranks: 2, strategy: 'NO_SHARD', extra: { training: { max_steps: 100000 } } }),
      'orphan.json',
    );
    let killedAt = 0;
    const { done } = startTrain([config, '--nproc', '2', '--run-dir', runDir], (line, child) => {
      if (killedAt || !line.includes('"type":"step"') || !line.includes('"step":3,')) return;
      killedAt = Date.now();
      child.kill('SIGKILL');
    });
    await done;
    assert.ok(killedAt);
    // The ranks outlive their launcher only until rank 0 notices. The condition is that run.json
    // ends (the bound is only for a job that never does: mocha's own timeout would say less); how
    // long rank 0 took to notice goes to the benchmark.
    const status = await untilValue(
      'run.json to leave "running" after the launcher was killed',
      async () => (JSON.parse(readFileSync(path.join(runDir, 'run.json'), 'utf8')) as { status: string }).status,
      (s) => s !== 'running',
      240_000,
      200,
    );
    recordDuration('sharding-launch: run.json ended after its launcher was SIGKILLed', killedAt);
    assert.equal(status, 'failed');
    const { events, manifest } = await readRun(runDir);
    assert.match(manifest.end_reason ?? '', /launcher .*is gone/);
    // Every process of the job ends (mpirun reaps the ranks once rank 0 leaves).
    for (const pid of manifest.pids ?? [])
      await until(`pid ${pid} of the job to end`, () => !isAlive(pid), 240_000, 200);
    assert.equal(eventsOf(events, 'run_end').at(-1)!.status, 'failed');
  });
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
