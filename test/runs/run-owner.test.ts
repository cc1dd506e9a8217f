// One owner per run (issue 25), on real processes: the process that writes the checkpoints holds
// the run folder's lock for its whole life, and nothing of a run outlives the process that owns it.
// - A native run: SIGKILL fsdp-train (the OOM killer's choice, or kill -9 on run.json's first pid).
//   Before, the lock went with it while fsdp-train-native trained on, a second `--resume auto` was
//   accepted and the two trainers destroyed each other's checkpoints. Now the trainer holds the lock
//   (a second trainer is refused, naming it), and ends the run itself, saying why.
// - A native run led by mpirun (an SSH host, several hosts): SIGKILL mpirun. Rank 0 ends the run,
//   saying why, and takes the other ranks on its host with it.
// - A person's command: SIGKILL the supervisor. Before, silent ranks ran on to the end and run.json
//   said "running" for ever. Now every process of the run dies with it (ranks and what they
//   started), and run.json and metrics.jsonl say it failed, and why.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from '../../scripts/code-server';
import { parseRunManifest, type RunManifest } from '../../core/protocol/run-manifest';
import { withMpirun } from '../../runs/launch/launcher';
import { LAUNCHER_ENV } from '../../runs/launch/mpirun';
import { LocalMachine } from '../../runs/machines/local-machine';
import { RunWatch } from '../../runs/watch/run-watch';
import { sampleRunConfig } from '../harness/sample-run-config';
import { until } from '../harness/until';
import { startingManifest, underOwner } from '../harness/run-owner-argv';
import { rankPidsOf } from '../native/train-runs';
import { untilOwned } from '../../runs/launch/until-owned';

const NATIVE = path.join(repoRoot, 'native', 'build', 'Release', 'fsdp-train-native');
const FSDP_TRAIN = path.join(repoRoot, 'cli', 'fsdp-train.ts');
const SUPERVISOR = path.join(repoRoot, 'python', 'fsdp_studio', 'supervise.py');

function manifestOf(runDir: string): RunManifest | undefined {
  try {
    const parsed = parseRunManifest(readFileSync(path.join(runDir, 'run.json'), 'utf8'));
    return 'manifest' in parsed ? parsed.manifest : undefined;
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/**
 * The attempt run.json names (its owner's), and that the attempt's run_start and run_end in
 * metrics.jsonl name it too, whoever wrote them (the runtime, the supervisor, its guard): a reader
 * tells whose start or end a line is by the line (issue 41 item 1).
 */
function assertEventsNameTheAttempt(runDir: string, m: RunManifest): void {
  const id = m.attempt?.id;
  assert.ok(id, `run.json names its attempt: ${JSON.stringify(m.attempt)}`);
  const bounds = events(runDir).filter((e) => e.type === 'run_start' || e.type === 'run_end');
  assert.deepEqual(
    bounds.map((e) => `${e.type} ${e.attempt}`),
    [`run_start ${id}`, `run_end ${id}`],
  );
}

/** Processes (not zombies) whose environment carries the run's mark. */
function markedProcesses(runId: string): number[] {
  const found: number[] = [];
  for (const name of readdirNumeric('/proc')) {
    try {
      if (
        readFileSync(`/proc/${name}/environ`, 'latin1').split('\0').includes(`FSDP_RUN_ID=${runId}`) &&
        alive(Number(name))
      )
        found.push(Number(name));
    } catch {
      /* gone, or not ours */
    }
  }
  return found;
}

function readdirNumeric(dir: string): string[] {
  return (spawnSync('ls', [dir], { encoding: 'utf8' }).stdout ?? '').split('\n').filter((n) => /^\d+$/.test(n));
}

function events(runDir: string): Array<{ type: string; status?: string; reason?: string; attempt?: string }> {
  const file = path.join(runDir, 'metrics.jsonl');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { type: string });
}

describe('one owner per run (real processes)', function () {
  this.timeout(300_000);
  let tmp: string;
  const local = new LocalMachine();
  const cleanup: number[] = [];

  beforeEach(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'fsdp-owner-'));
  });
  afterEach(() => {
    for (const pid of cleanup.splice(0)) {
      try {
        process.kill(pid, 'SIGCONT');
        process.kill(-pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    rmSync(tmp, { recursive: true, force: true });
  });

  it("fsdp-train killed outright: the run's owner keeps the lock (a second trainer is refused, naming it) and the trainer ends the run saying why", async () => {
    const runDir = path.join(tmp, 'native-20261126-000000-abcd');
    const runId = path.basename(runDir);
    // As the editor starts it: the supervisor (the run's owner) around fsdp-train --supervised.
    const fsdpTrainArgv = (...args: string[]) => [
      process.execPath,
      '--import',
      'tsx',
      FSDP_TRAIN,
      path.join(repoRoot, 'samples', 'tiny-cpu.yaml'),
      '--run-dir',
      runDir,
      ...args,
    ];
    const argv = underOwner(runDir, fsdpTrainArgv('--set', 'training.max_steps=100000', '--supervised'), 'native');
    const manifest = startingManifest(runId, { command: argv });
    const started = await local.start({ runDir, manifest, argv, cwd: repoRoot, env: { FSDP_TRAIN_NATIVE: NATIVE } });
    cleanup.push(started.pgid);
    await until('the first steps', () => events(runDir).some((e) => e.type === 'step'), 180_000);
    // The trainer as it names itself (run_start); run.json names it too, a poll of its supervisor later.
    const [trainer] = rankPidsOf(runDir);
    await until('run.json names the trainer', () => (manifestOf(runDir)?.pids ?? []).includes(trainer), 10_000);
    const m = manifestOf(runDir)!;
    // run.json names the supervisor, then fsdp-train (its child), then the trainer.
    const [owner, fsdpTrain] = m.pids ?? [];
    assert.equal(owner, started.pid);
    assert.ok(
      fsdpTrain && trainer && alive(trainer),
      `run.json names fsdp-train and the trainer: ${JSON.stringify(m.pids)}`,
    );

    // Held still, so that what follows cannot race it; then its launcher is killed as the OOM killer would.
    process.kill(trainer, 'SIGSTOP');
    process.kill(fsdpTrain, 'SIGKILL');
    await until('fsdp-train gone', () => !alive(fsdpTrain), 10_000);
    const [node, ...secondArgs] = fsdpTrainArgv('--resume', 'auto');
    const second = spawnSync(node, secondArgs, {
      cwd: repoRoot,
      encoding: 'utf8',
      timeout: 120_000,
      env: { ...process.env, FSDP_TRAIN_NATIVE: NATIVE },
    });
    assert.equal(second.status, 1, `a second trainer on the folder was accepted: ${second.stderr}`);
    // The lock is the owner's for the whole attempt (issue 41): it names the supervisor.
    assert.match(second.stderr, new RegExp(`in use by another trainer: pid ${owner} `));

    process.kill(trainer, 'SIGCONT');
    await until('the trainer to end', () => !alive(trainer), 30_000);
    await until('the supervisor to end', () => !alive(started.pid), 30_000);
    const ended = manifestOf(runDir)!;
    assert.equal(ended.status, 'failed');
    assert.match(ended.end_reason ?? '', new RegExp(`launcher \\(pid ${fsdpTrain}, fsdp-train\\) is gone`));
    assert.deepEqual(events(runDir).filter((e) => e.type === 'run_start').length, 1, 'one trainer wrote this run');
    // The trainer's end, written by its launcher watch, names the attempt its owner started it for.
    assertEventsNameTheAttempt(runDir, ended);
    assert.deepEqual(markedProcesses(runId), [], 'nothing of the run is left');
  });

  it('mpirun killed outright (a run on an SSH host or across hosts): rank 0 ends the run saying why, and no rank outlives it', async () => {
    const runDir = path.join(tmp, 'mpi-20261126-000000-abcd');
    const runId = path.basename(runDir);
    mkdirSync(runDir);
    const { config } = sampleRunConfig(tmp, {
      name: 'two-ranks',
      steps: 100_000,
      sharding: 'FULL_SHARD',
      launch: (text) => text.replace(/^(\s+)nproc_per_node: .*$/m, '$1nproc_per_node: 2'),
    });
    writeFileSync(path.join(runDir, 'config.json'), JSON.stringify(config));
    // As an SSH launch starts it on a host: the supervisor (the run's owner, led by the detached
    // start) around mpirun around the runtime.
    const runtimeArgv = withMpirun(
      config,
      [NATIVE, '--config', path.join(runDir, 'config.json'), '--run-dir', runDir],
      ['OMP_WAIT_POLICY', ...LAUNCHER_ENV],
    );
    assert.equal(runtimeArgv[0], 'mpirun');
    const argv = underOwner(runDir, runtimeArgv, 'native');
    const manifest = startingManifest(runId, { command: argv, world: { size: 2 } });
    const started = await local.start({ runDir, manifest, argv, cwd: runDir, env: { OMP_WAIT_POLICY: 'passive' } });
    cleanup.push(started.pgid);
    await until('the first steps', () => events(runDir).some((e) => e.type === 'step'), 180_000);
    const ranks = markedProcesses(runId).filter(
      (p) => p !== started.pid && readFileSync(`/proc/${p}/cmdline`, 'latin1').startsWith(NATIVE),
    );
    assert.equal(ranks.length, 2, `two ranks carry the run's mark: ${ranks}`);
    const mpirun = markedProcesses(runId).find((p) =>
      readFileSync(`/proc/${p}/cmdline`, 'latin1').startsWith('mpirun'),
    )!;
    assert.ok(mpirun, 'mpirun carries the run mark');

    process.kill(mpirun, 'SIGKILL');
    await until('every rank gone', () => ranks.every((p) => !alive(p)), 60_000);
    await until('the supervisor to end', () => !alive(started.pid), 30_000);
    const ended = manifestOf(runDir)!;
    assert.equal(ended.status, 'failed');
    assert.match(ended.end_reason ?? '', new RegExp(`launcher \\(pid ${mpirun}, mpirun\\) is gone`));
    assert.deepEqual(
      events(runDir)
        .filter((e) => e.type === 'run_end')
        .map((e) => e.status),
      ['failed'],
    );
    assertEventsNameTheAttempt(runDir, ended);
  });

  for (const [what, command] of [
    ['silent ranks', ['--nproc', '2', '--', 'python3', '-c', 'import time; time.sleep(600)']],
    ["what the command started (a launcher's workers)", ['--', '/bin/sh', '-c', 'sleep 600 & sleep 600 & wait']],
  ] as const) {
    it(`a supervisor killed outright takes ${what} with it; run.json and the watch say it failed, and why`, async () => {
      const runDir = path.join(tmp, `cmd-20261126-00000${what.length % 10}-abcd`);
      const runId = path.basename(runDir);
      const argv = ['python3', SUPERVISOR, '--run-dir', runDir, ...command];
      const manifest = startingManifest(runId, { command: argv, kind: 'command' });
      const started = await local.start({ runDir, manifest, argv, cwd: tmp });
      cleanup.push(started.pgid);
      await until('the command running', () => manifestOf(runDir)?.status === 'running', 60_000);
      await until('its processes started', () => markedProcesses(runId).length >= 3, 30_000);

      process.kill(started.pid, 'SIGKILL');
      await until('every process of the run gone', () => markedProcesses(runId).length === 0, 30_000);
      const ended = manifestOf(runDir)!;
      assert.equal(ended.status, 'failed');
      assert.match(ended.end_reason ?? '', new RegExp(`supervisor \\(pid ${started.pid}\\) was killed`));
      const end = events(runDir).filter((e) => e.type === 'run_end');
      assert.equal(end.length, 1);
      assert.equal(end[0].status, 'failed');
      // run_start by the supervisor, run_end by its guard: both the attempt's.
      assertEventsNameTheAttempt(runDir, ended);

      const watch = new RunWatch({ target: 'local', runDir }, local);
      try {
        await watch.start();
        await until('the watch to say failed', () => watch.status() === 'failed', 30_000);
        assert.match(watch.endReason() ?? '', /supervisor .* was killed/);
      } finally {
        watch.dispose();
      }
    });
  }

  it('a detached launch returns once its owner named itself in run.json; an owner that cannot start fails the launch with what it printed', async () => {
    const runDir = path.join(tmp, 'owned-20261126-000000-abcd');
    const manifest = startingManifest(path.basename(runDir));
    const launched = async (argv: string[], dir = runDir) => {
      const started = await local.start({ runDir: dir, manifest, argv, cwd: tmp });
      cleanup.push(started.pgid);
      return { ...started, target: 'local', runDir: dir, runId: manifest.run_id, argv };
    };
    const ok = await launched(underOwner(runDir, ['sleep', '30']));
    await untilOwned(local, ok);
    assert.equal(manifestOf(runDir)?.pids?.[0], ok.pid, 'run.json names the owner first when the launch returns');
    // As on a host without python3: the start's exec fails and nothing writes run.json.
    const missing = await launched(['/nonexistent/python3', 'supervise.py', '--run-dir', runDir, '--', 'true']);
    await assert.rejects(untilOwned(local, missing), /ended before it wrote .*run\.json: .*nonexistent\/python3/);
    // As with a Python too old for the companion: its own code does not parse (here a real
    // SyntaxError of a real python3, in a file where the companion's supervisor would be).
    const companion = path.join(tmp, 'old-python', 'fsdp_studio');
    mkdirSync(companion, { recursive: true });
    writeFileSync(path.join(companion, 'supervise.py'), 'print "a Python 2 statement"\n');
    const old = await launched(['python3', path.join(companion, 'supervise.py'), '--run-dir', runDir, '--', 'true']);
    await assert.rejects(
      untilOwned(local, old),
      /ended before it wrote .*run\.json: it printed ".*SyntaxError.*" \(python3 is older than the Python 3\.9 FSDP Studio's supervisor needs/,
    );
    // As with a python3 that hangs: alive, printing, never writing run.json. The launch fails saying
    // so and what it printed (it reported success before), and the hung owner is stopped.
    const hung = await launched(
      ['/bin/sh', '-c', 'echo "importing fsdp_studio" >&2; exec sleep 600'],
      path.join(tmp, 'hung-20261126-000000-abcd'),
    );
    await assert.rejects(
      untilOwned(local, hung, 2_000),
      /the run's owner \(\/bin\/sh, pid \d+\) did not start within 2 s \(no run\.json in .*\): it printed "importing fsdp_studio"; it was stopped/,
    );
    await until('the hung owner to be gone', async () => (await local.isAlive(hung.pgid)) === false, 30_000);
  });
});
