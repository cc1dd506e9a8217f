// Issue 41 item 1, one writer of a run's stream: under its owner (the supervisor) the native runtime's
// rank 0 and the companion in a person's command each append to a file of their own,
// events/<attempt>/, and the owner alone appends to metrics.jsonl, merging those files in the order
// it reads them (python/fsdp_studio/event_merge.py; native/FORMATS.md, "The run folder and its
// owner"). On real processes: a 2-rank native job that completes and one whose mpirun is killed, and
// a 2-rank person's command logging through the companion from both ranks. Each ends with the
// stream complete and in order — exactly one run_start and one run_end of the attempt, both naming
// it — and no per-writer file left. (The grep-level check, which source files open metrics.jsonl
// for writing: test/unit/run-json-writer.test.ts.)
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { MetricsEvent } from '../../core/protocol/metrics';
import { DDP_SCRIPT, SUPERVISOR, VENV_PYTHON } from '../harness/pytorch';
import { until } from '../harness/until';
import { eventsOf, readRun, smallConfig, startTrain, tempDir, writeConfig } from '../native/train-runs';
import { childrenOf, commandOf } from '../harness/proc';

/** The one stream of a finished attempt: read as the extension reads it, and checked whole. */
async function oneStream(runDir: string): Promise<{ events: MetricsEvent[]; attempt: string; reason?: string }> {
  const { events, problems, manifest } = await readRun(runDir);
  assert.deepEqual(problems, [], 'every line of metrics.jsonl is a whole event');
  const attempt = manifest.attempt?.id ?? '';
  assert.match(attempt, /^[0-9a-f]+$/, 'run.json names the attempt');
  const bounds = events.filter((e) => e.type === 'run_start' || e.type === 'run_end');
  assert.deepEqual(
    bounds.map((e) => [e.type, (e as { attempt?: string }).attempt]),
    [
      ['run_start', attempt],
      ['run_end', attempt],
    ],
    'exactly one start and one end of the attempt, in that order',
  );
  assert.equal(events[0].type, 'run_start', 'the start comes first');
  assert.equal(events.at(-1)!.type, 'run_end', 'the end comes last');
  assert.equal(existsSync(path.join(runDir, 'events')), false, 'the per-writer files were removed once merged');
  const end = eventsOf(events, 'run_end')[0];
  assert.equal(end.status, manifest.status, 'run.json says the end the stream says');
  return { events, attempt, reason: end.reason };
}

describe("one writer of a run's stream under its owner (issue 41 item 1)", function () {
  this.timeout(300_000);
  let dir: string;
  const groups: number[] = [];
  beforeEach(() => (dir = tempDir('one-stream')));
  afterEach(() => {
    for (const g of groups.splice(0))
      try {
        process.kill(-g, 'SIGKILL');
      } catch {
        // gone
      }
    rmSync(dir, { recursive: true, force: true });
  });

  it('a 2-rank native job: the runtime writes its own file, the owner merges it; steps in order, one start, one end', async () => {
    const runDir = path.join(dir, 'run');
    const config = writeConfig(
      dir,
      smallConfig({
        training: { max_steps: 12 },
        fsdp: { sharding_strategy: 'FULL_SHARD' },
        checkpointing: { save_every_n_steps: 4 },
        launch: { threads_per_rank: 1 },
      }),
    );
    const { child, done } = startTrain([config, '--nproc', '2', '--run-dir', runDir], undefined, { detached: true });
    groups.push(child.pid!);
    const r = await done;
    assert.equal(r.code, 0, r.stderr);
    const { events } = await oneStream(runDir);
    assert.deepEqual(
      // The whole job's steps (each rank logs its own too, naming its rank).
      eventsOf(events, 'step')
        .filter((e) => e.rank === undefined)
        .map((e) => e.step),
      Array.from({ length: 12 }, (_, i) => i + 1),
    );
    assert.deepEqual(
      eventsOf(events, 'checkpoint').map((e) => e.step),
      [4, 8, 12],
    );
    assert.equal(eventsOf(events, 'run_end')[0].status, 'completed');
    // The owner names the attempt's processes once the runtime's start named its ranks, after that start.
    const processes = eventsOf(events, 'processes');
    assert.equal(processes.length, 1, JSON.stringify(processes));
    assert.ok(events.indexOf(processes[0]) > 0, 'after the start it names');
    const roles = processes[0].processes.map((p) => [p.role, p.name ?? p.rank]);
    assert.deepEqual(roles, [
      ['owner', 'supervise.py'],
      ['guard', 'supervise.py'],
      ['launcher', 'fsdp-train'],
      ['rank', 0],
      ['rank', 1],
    ]);
    assert.deepEqual(
      processes[0].processes.filter((p) => p.role === 'rank').map((p) => p.pid),
      eventsOf(events, 'run_start')[0].world.ranks.map((r) => r.pid),
    );
  });

  it('a Stop, and a second one while the run is stopping, are in the stream as its owner noted them, before the one end', async () => {
    const runDir = path.join(dir, 'run');
    // Steps long enough that a second Stop comes while the run finishes the step the first stopped after.
    const config = writeConfig(
      dir,
      smallConfig({
        model: { d_model: 256, n_layers: 6, n_heads: 4, max_seq_len: 128 },
        data: { seq_len: 128 },
        training: { max_steps: 100_000, batch_size_per_gpu: 8 },
        checkpointing: { save_every_n_steps: 0, save_final: true },
      }),
    );
    let stepSeen: () => void = () => undefined;
    const firstStep = new Promise<void>((resolve) => (stepSeen = resolve));
    const { child, done } = startTrain(
      [config, '--run-dir', runDir],
      (line) => {
        if (line.includes('"type":"step"')) stepSeen();
      },
      { detached: true },
    );
    groups.push(child.pid!);
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d));
    await firstStep;
    const pgid = (JSON.parse(readFileSync(path.join(runDir, 'run.json'), 'utf8')) as { pgid: number }).pgid;
    // As the editor's Stop signals the run's group: the second once the first is acted on.
    process.kill(-pgid, 'SIGTERM');
    await until('the first Stop is acted on', () => /stopping after the current step/.test(stderr), 60_000);
    process.kill(-pgid, 'SIGTERM');
    const r = await done;
    assert.match(r.stderr, /already stopping/, 'the second Stop came while the run was stopping');
    const { events } = await oneStream(runDir);
    assert.deepEqual(
      eventsOf(events, 'stop_requested').map((e) => [e.signal, e.already_stopping ?? false]),
      [
        ['SIGTERM', false],
        ['SIGTERM', true],
      ],
    );
    assert.equal(eventsOf(events, 'run_end')[0].status, 'stopped');
  });

  it('a 2-rank native job whose mpirun is killed: the owner writes the end in the stream too, once', async () => {
    const runDir = path.join(dir, 'run');
    const config = writeConfig(
      dir,
      smallConfig({
        training: { max_steps: 100_000 },
        fsdp: { sharding_strategy: 'FULL_SHARD' },
        launch: { threads_per_rank: 1 },
      }),
    );
    let stepSeen: () => void = () => undefined;
    const thirdStep = new Promise<void>((resolve) => (stepSeen = resolve));
    const { child, done } = startTrain(
      [config, '--nproc', '2', '--run-dir', runDir],
      (line) => {
        if (line.includes('"type":"step"') && line.includes('"step":3,')) stepSeen();
      },
      { detached: true },
    );
    groups.push(child.pid!);
    await thirdStep;
    // While the attempt lives the runtime appends to its own file, which the owner merges.
    const attempt = (JSON.parse(readFileSync(path.join(runDir, 'run.json'), 'utf8')) as { attempt: { id: string } })
      .attempt.id;
    const own = path.join(runDir, 'events', attempt, 'runtime.jsonl');
    assert.ok(existsSync(own), `the runtime writes ${own}`);
    assert.match(readFileSync(own, 'utf8'), /"type":"run_start"/);
    await until(
      'the owner merged the runtime’s start into metrics.jsonl',
      () =>
        existsSync(path.join(runDir, 'metrics.jsonl')) &&
        readFileSync(path.join(runDir, 'metrics.jsonl'), 'utf8').includes('"type":"run_start"'),
      60_000,
    );
    const supervisor = (JSON.parse(readFileSync(path.join(runDir, 'run.json'), 'utf8')) as { pgid: number }).pgid;
    const launcher = childrenOf(supervisor).find((pid) => commandOf(pid).includes('--supervised'));
    assert.ok(launcher, `the supervisor ${supervisor} runs fsdp-train --supervised`);
    const mpirun = childrenOf(launcher).find((pid) => /^\S*mpirun /.test(commandOf(pid)));
    assert.ok(mpirun, `fsdp-train ${launcher} runs mpirun: ${childrenOf(launcher).map(commandOf)}`);
    process.kill(mpirun, 'SIGKILL');
    const r = await done;
    assert.notEqual(r.code, 0, r.stderr);
    const { reason } = await oneStream(runDir);
    assert.match(reason ?? '', /mpirun/, 'the end names what died');
    assert.match(reason ?? '', new RegExp(`\\b${mpirun}\\b`), 'by its pid');
  });

  it("a 2-rank person's command: each rank's companion writes its own file, the owner merges them", async () => {
    const runDir = path.join(dir, 'ddp');
    mkdirSync(runDir, { recursive: true });
    writeFileSync(
      path.join(runDir, 'run.json'),
      JSON.stringify({
        v: 1,
        run_id: 'ddp',
        created: Date.now() / 1000,
        status: 'starting',
        config: { command: 'ddp_train.py' },
        world: { size: 2 },
        host: os.hostname(),
        kind: 'command',
      }),
    );
    // Rank 1 plants a NaN: its anomaly comes from its own file, rank 0's scalars and anomaly from rank 0's.
    const owner = spawn(
      VENV_PYTHON,
      [
        SUPERVISOR,
        '--run-dir',
        runDir,
        '--nproc',
        '2',
        '--',
        VENV_PYTHON,
        DDP_SCRIPT,
        '--steps',
        '20',
        '--nan-step',
        '8',
        '--nan-rank',
        '1',
      ],
      { detached: true, stdio: ['ignore', 'ignore', 'pipe'], cwd: runDir },
    );
    groups.push(owner.pid!);
    let stderr = '';
    owner.stderr!.on('data', (d: Buffer) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => owner.on('exit', resolve));
    assert.equal(code, 0, stderr);
    const { events } = await oneStream(runDir);
    const steps = eventsOf(events, 'scalars').map((e) => e.step);
    assert.deepEqual(
      steps,
      [...steps].sort((a, b) => a - b),
      'rank 0’s steps in the order it logged them',
    );
    assert.ok(steps.includes(20), JSON.stringify(steps));
    const ranks = new Set(eventsOf(events, 'anomaly').map((e) => e.where.rank));
    assert.deepEqual([...ranks].sort(), [0, 1], 'both ranks’ anomalies reached the stream');
    assert.equal(eventsOf(events, 'run_end')[0].status, 'completed');
    assert.deepEqual(
      eventsOf(events, 'processes')[0].processes.map((p) => [p.role, p.rank]),
      [
        ['owner', undefined],
        ['guard', undefined],
        ['command', 0],
        ['command', 1],
      ],
    );
    assert.deepEqual(
      readdirSync(runDir).filter((n) => n === 'events'),
      [],
    );
  });
});
