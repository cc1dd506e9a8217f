// Issue 41's faults, on real processes: two Stops at once are one stop (the checkpoint is still
// saved, the run ends "stopped"; only Stop's kill now kills); a rank that fails alone (rank 0 on a
// full disk) ends the whole job at once with its own reason, not after another rank's collective
// timeout; the run folder's lock is held until every process of the attempt is gone, so a resume
// is refused beside it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { LocalMachine } from '../../runs/machines/local-machine';
import { stopRun } from '../../runs/stop/stop-run';
import { until } from '../harness/until';
import { eventsOf, rankPidsOf, readRun, smallConfig, startTrain, tempDir, train, writeConfig } from './train-runs';
import { childrenOf, commandOf } from '../harness/proc';

/** Steps of a second or more here, so that a stop is still finishing its step when the next signal comes. */
function slowSteps(overrides: Record<string, Record<string, unknown>> = {}): Record<string, unknown> {
  return smallConfig({
    model: { d_model: 256, n_layers: 6, n_heads: 4, max_seq_len: 128 },
    data: { seq_len: 128 },
    training: { max_steps: 100_000, batch_size_per_gpu: 8 },
    checkpointing: { save_every_n_steps: 0, save_final: true },
    ...overrides,
  });
}

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

describe("a run's faults: two Stops, a rank that fails alone, the lock (issue 41)", function () {
  this.timeout(240_000);
  let dir: string;
  const mounts: string[] = [];
  beforeEach(() => (dir = tempDir('run-faults')));
  afterEach(() => {
    for (const m of mounts.splice(0)) spawnSync('umount', ['-l', m]);
    rmSync(dir, { recursive: true, force: true });
  });

  for (const nproc of [1, 2]) {
    it(`takes a second Stop while the run is stopping as the same stop, ${nproc} rank${nproc > 1 ? 's' : ''}: the checkpoint is saved and the run ends "stopped"`, async () => {
      const runDir = path.join(dir, 'run');
      const config = writeConfig(
        dir,
        slowSteps({ fsdp: { sharding_strategy: nproc > 1 ? 'FULL_SHARD' : 'NO_SHARD' } }),
      );
      let stepSeen: () => void = () => undefined;
      const firstStep = new Promise<void>((resolve) => (stepSeen = resolve));
      // Detached, as the editor starts a run: Stop signals the group run.json names, not this test's.
      const { child, done } = startTrain(
        [config, '--nproc', String(nproc), '--run-dir', runDir],
        (line) => {
          if (line.includes('"type":"step"')) stepSeen();
        },
        { detached: true },
      );
      let stderr = '';
      child.stderr!.on('data', (d: Buffer) => (stderr += d));
      await firstStep;
      const { manifest } = await readRun(runDir);
      // Two editors (or a double click) stop the same run, each as "FSDP: Stop run" does; the second
      // is sent once the first is being acted on, while the run finishes its step.
      const machine = new LocalMachine();
      const first = stopRun(machine, manifest, { graceMs: 600_000 });
      await until('the first Stop is acted on', () => /stopping after the current step/.test(stderr), 60_000);
      const second = stopRun(machine, manifest, { graceMs: 600_000 });
      const outcomes = await Promise.all([first, second]);
      const r = await done;
      // Both Stops stopped the run gracefully: neither had to kill it.
      for (const o of outcomes) assert.ok(o.stopped && !o.killed, JSON.stringify(o));
      assert.equal(r.code, 143, r.stderr);
      const { events, manifest: after } = await readRun(runDir);
      const ends = eventsOf(events, 'run_end');
      assert.equal(ends.length, 1, JSON.stringify(ends));
      assert.equal(ends[0].status, 'stopped', JSON.stringify(ends[0]));
      assert.deepEqual(
        eventsOf(events, 'checkpoint').map((c) => c.step),
        [ends[0].step],
        'the stop saved a checkpoint at the step it stopped after',
      );
      assert.equal(after.status, 'stopped');
      assert.match(r.stderr, /SIGTERM: already stopping after SIGTERM/);
      assert.doesNotMatch(r.stderr, /aborting/);
    });
  }

  it("ends a 2-rank job at once when rank 0's disk fills, with rank 0's reason, not after a collective timeout", async () => {
    // The run folder on a 40 MB file system of its own, filled up while the job runs: rank 0's next
    // write of metrics.jsonl fails, which the other rank, waiting in the next collective, cannot know.
    const disk = path.join(dir, 'disk');
    mkdirSync(disk);
    const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=40m', 'tmpfs', disk], { encoding: 'utf8' });
    assert.equal(mounted.status, 0, `this test mounts a small tmpfs (as root): ${mounted.stderr}`);
    mounts.push(disk);
    const runDir = path.join(disk, 'run');
    // A short collective timeout: a job left to the other rank's watchdog ends at twice it, saying so.
    const config = writeConfig(
      dir,
      smallConfig({
        training: { max_steps: 100_000 },
        fsdp: { sharding_strategy: 'FULL_SHARD' },
        launch: { threads_per_rank: 1, collective_timeout_s: 30 },
      }),
    );
    let filled = false;
    let ranks: number[] = [];
    const { done } = startTrain([config, '--nproc', '2', '--run-dir', runDir], (line) => {
      if (filled || !line.includes('"type":"step"') || !line.includes('"step":3,')) return;
      filled = true;
      // The ranks as the runtime's start names them, read before the disk fills: its owner may not
      // have merged that start into metrics.jsonl yet, and cannot once the disk is full.
      ranks = rankPidsOf(runDir);
      spawnSync('dd', ['if=/dev/zero', `of=${path.join(disk, 'filler')}`, 'bs=1M']); // until ENOSPC
    });
    const r = await done;
    assert.ok(filled, r.stderr);
    assert.notEqual(r.code, 0, r.stderr);
    // Ended by rank 0 itself, not by the other rank's watchdog giving up on it.
    assert.doesNotMatch(r.stderr, /in a collective that did not complete/);
    // metrics.jsonl ends in the line the full disk cut short: read as the extension reads it.
    const { manifest } = await readRun(runDir);
    assert.equal(ranks.length, 2, JSON.stringify(ranks));
    await until(
      'every rank of the job has ended',
      () => ranks.every((pid) => pid !== undefined && !alive(pid)),
      20_000,
    );
    assert.equal(manifest.status, 'failed');
    assert.match(
      (manifest as { end_reason?: string }).end_reason ?? '',
      /^disk full: .*metrics\.jsonl: cannot write: No space left on device/,
    );
  });

  it('holds the run folder for the whole attempt: a resume is refused while a process of it lives, its trainer gone', async () => {
    const runDir = path.join(dir, 'run');
    const config = writeConfig(dir, smallConfig({ training: { max_steps: 100_000 } }));
    let stepSeen: () => void = () => undefined;
    const firstStep = new Promise<void>((resolve) => (stepSeen = resolve));
    const { done } = startTrain(
      [config, '--run-dir', runDir],
      (line) => {
        if (line.includes('"type":"step"')) stepSeen();
      },
      { detached: true },
    );
    await firstStep;
    const { manifest } = await readRun(runDir);
    const supervisor = manifest.pgid!; // the owner leads the run's process group
    // The attempt outlives its trainer (as mpirun and the other ranks outlived rank 0 on a full
    // disk): the fsdp-train its supervisor started is frozen, then the trainer is killed.
    const launcher = childrenOf(supervisor).find((pid) => commandOf(pid).includes('--supervised'));
    assert.ok(launcher, `the supervisor ${supervisor} runs fsdp-train --supervised`);
    const trainer = rankPidsOf(runDir)[0];
    process.kill(launcher, 'SIGSTOP');
    try {
      process.kill(trainer, 'SIGKILL');
      await until('the trainer has ended', () => !alive(trainer), 20_000);
      const resume = await train([config, '--run-dir', runDir, '--resume', 'never', '--set', 'training.max_steps=2']);
      assert.equal(resume.code, 1, resume.stderr);
      assert.match(resume.stderr, new RegExp(`is in use by another trainer: pid ${supervisor} on host `));
    } finally {
      process.kill(launcher, 'SIGCONT');
    }
    await done;
    assert.equal((await readRun(runDir)).manifest.status, 'failed');
    // Once every process of the attempt is gone the folder is free: a resume is accepted.
    const resumed = await train([config, '--run-dir', runDir, '--resume', 'never', '--set', 'training.max_steps=2']);
    assert.equal(resumed.code, 0, resumed.stderr);
  });
});
