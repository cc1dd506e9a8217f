// Issue 19, items 3, 4, 8, 9 and 10, and issue 26, item 4, through the real CLI and trainer: what a
// run folder holds stays consistent whatever happened to it — a torn last line of metrics.jsonl, a
// second trainer on the same folder, checkpoints that are all unusable or gone, a checkpoint from
// beyond max_steps, a disk that fills up (a real 8 MiB tmpfs).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statfsSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { nativeCli } from './native-build';
import { eventsOf, rankPidsOf, readRun, smallConfig, startTrain, tempDir, train, writeConfig } from './train-runs';

const quote = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Every file under dir with its bytes, to show that nothing was touched. */
/** Bytes a folder's files take on a tmpfs: each file rounded up to whole pages. */
function bytesOnTmpfs(dir: string): number {
  let total = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) total += Math.ceil(statSync(path.join(e.parentPath, e.name)).size / 4096) * 4096;
  }
  return total;
}

function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.set(path.relative(dir, p), readFileSync(p).toString('base64'));
    }
  };
  walk(dir);
  return out;
}

describe('fsdp-train: the run folder stays consistent', function () {
  this.timeout(300_000);
  let dir: string;
  beforeEach(() => (dir = tempDir('hardening-run-folder')));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('a resumed trainer ends a torn last line of metrics.jsonl before its first event', async () => {
    const runDir = path.join(dir, 'run');
    const config = writeConfig(
      dir,
      smallConfig({ training: { max_steps: 4 }, checkpointing: { save_every_n_steps: 2 } }),
    );
    assert.equal((await train([config, '--run-dir', runDir])).code, 0);
    // A writer killed mid-line left half an event behind.
    appendFileSync(path.join(runDir, 'metrics.jsonl'), '{"v":1,"type":"step","time":17');
    const longer = writeConfig(
      dir,
      smallConfig({ training: { max_steps: 6 }, checkpointing: { save_every_n_steps: 2 } }),
      'longer.json',
    );
    const r = await train([longer, '--run-dir', runDir, '--resume', 'auto']);
    assert.equal(r.code, 0, r.stderr);
    const { events, problems } = await readRun(runDir);
    assert.deepEqual(
      problems.map((p) => p.excerpt),
      ['{"v":1,"type":"step","time":17'],
      'the torn line is one bad line of its own',
    );
    assert.equal(eventsOf(events, 'run_start').length, 2, 'the resumed run_start was not merged into the torn line');
    assert.deepEqual(
      eventsOf(events, 'step').map((e) => e.step),
      [1, 2, 3, 4, 5, 6],
    );
    assert.ok(readFileSync(path.join(runDir, 'metrics.jsonl'), 'utf8').endsWith('\n'));
  });

  it("refuses a second trainer on a run folder in use, naming the pid and host of the first one's owner, and touches nothing", async () => {
    const runDir = path.join(dir, 'run');
    const config = writeConfig(
      dir,
      smallConfig({ training: { max_steps: 100_000 }, checkpointing: { save_every_n_steps: 5 } }),
    );
    let first: { pid: number } | undefined;
    let before: Map<string, string> | undefined;
    const second: { code: number | null; stderr: string }[] = [];
    const { done } = startTrain([config, '--run-dir', runDir], (line, child) => {
      if (first || !line.includes('"type":"step"') || !line.includes('"step":7,')) return;
      // The first trainer pauses between checkpoints: its folder must not change while the others try.
      const runtime = rankPidsOf(runDir)[0];
      // The lock is the run's owner's, its supervisor's (the first of run.json's pids), held for the
      // whole attempt (issue 41), not fsdp-train's.
      first = { pid: (JSON.parse(readFileSync(path.join(runDir, 'run.json'), 'utf8')) as { pids: number[] }).pids[0] };
      assert.notEqual(first.pid, child.pid);
      assert.notEqual(first.pid, runtime);
      process.kill(runtime, 'SIGSTOP');
      // Its supervisor catches up with what it logged (run.json's step, at most once a second), then
      // the folder stays as it is while the trainer is held.
      let settled = '';
      for (let i = 0; i < 10 && settled !== readFileSync(path.join(runDir, 'run.json'), 'utf8'); i++) {
        settled = readFileSync(path.join(runDir, 'run.json'), 'utf8');
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1500);
      }
      before = snapshot(runDir);
      const other = writeConfig(dir, smallConfig({ model: { d_model: 64 }, training: { max_steps: 3 } }), 'other.json');
      const viaCli = spawnSync(
        process.execPath,
        [path.join(__dirname, '..', '..', 'bin', 'fsdp-train.mjs'), other, '--run-dir', runDir],
        { encoding: 'utf8' },
      );
      second.push({ code: viaCli.status, stderr: viaCli.stderr });
      // The runtime started by hand, without fsdp-train, is refused the same way.
      const direct = spawnSync(nativeCli, ['--config', path.join(runDir, 'config.json'), '--run-dir', runDir], {
        encoding: 'utf8',
      });
      second.push({ code: direct.status, stderr: direct.stderr });
      assert.deepEqual(snapshot(runDir), before, 'the refused trainers changed the folder');
      process.kill(runtime, 'SIGCONT');
      child.kill('SIGTERM');
    });
    const r = await done;
    assert.ok(first, r.stderr);
    const held = new RegExp(
      `${quote(runDir)} is in use by another trainer: pid ${first.pid} on host ${quote(os.hostname())} since [0-9: -]+ holds ${quote(path.join(runDir, 'run.lock'))}`,
    );
    assert.equal(second[0].code, 1, second[0].stderr);
    assert.match(second[0].stderr, held);
    assert.equal(second[1].code, 1, second[1].stderr);
    assert.match(second[1].stderr, held);
    // The first run went on and stopped as asked, its own checkpoints and history intact.
    assert.equal(r.code, 143, r.stderr);
    const { events, manifest } = await readRun(runDir);
    assert.equal(manifest.status, 'stopped');
    assert.equal(eventsOf(events, 'run_start').length, 1);
    assert.equal(
      (JSON.parse(readFileSync(path.join(runDir, 'config.json'), 'utf8')) as { model: { d_model: number } }).model
        .d_model,
      32,
    );
  });

  it('takes over the lock a killed trainer left behind', async () => {
    const runDir = path.join(dir, 'run');
    mkdirSync(runDir);
    // What a SIGKILLed trainer leaves: the lock file naming it; the kernel released its lock.
    writeFileSync(path.join(runDir, 'run.lock'), `${process.pid + 1_000_000} ${os.hostname()} 1700000000\n`);
    const r = await train([writeConfig(dir, smallConfig({ training: { max_steps: 2 } })), '--run-dir', runDir]);
    assert.equal(r.code, 0, r.stderr);
  });

  it('--resume auto stops with an error naming every unusable checkpoint; --resume never starts over and deletes none', async () => {
    const runDir = path.join(dir, 'run');
    const config = writeConfig(
      dir,
      smallConfig({ training: { max_steps: 6 }, checkpointing: { save_every_n_steps: 2, keep_last_n: 3 } }),
    );
    assert.equal((await train([config, '--run-dir', runDir])).code, 0);
    const ckpts = path.join(runDir, 'checkpoints');
    truncateSync(path.join(ckpts, 'step-00000006', 'rank-00000.bin'), 100);
    writeFileSync(
      path.join(ckpts, 'step-00000004', 'manifest.json'),
      '{"format": "fsdp-studio-checkpoint", "complete": tru',
    );
    appendFileSync(path.join(ckpts, 'step-00000002', 'rank-00000.bin'), 'x');
    const before = snapshot(ckpts);
    const metricsBefore = readFileSync(path.join(runDir, 'metrics.jsonl'), 'utf8');
    const r = await train([config, '--run-dir', runDir, '--resume', 'auto']);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /--resume auto: none of the 3 checkpoints in .*checkpoints can be loaded:/);
    assert.match(
      r.stderr,
      /step-00000006: .*step-00000006\/rank-00000\.bin: 100 bytes, the manifest says \d+ \(truncated\)/,
    );
    assert.match(r.stderr, /step-00000004: .*step-00000004\/manifest\.json: not valid JSON/);
    assert.match(
      r.stderr,
      /step-00000002: .*step-00000002\/rank-00000\.bin: \d+ bytes, the manifest says \d+ \(truncated\)/,
    );
    assert.match(
      r.stderr,
      /Nothing was started and nothing deleted\. To start over from step 0 instead, run with --resume never/,
    );
    assert.deepEqual(snapshot(ckpts), before, 'a checkpoint was changed or deleted');
    const { events, manifest } = await readRun(runDir);
    assert.equal(eventsOf(events, 'run_start').length, 1, 'no second history in metrics.jsonl');
    assert.ok(readFileSync(path.join(runDir, 'metrics.jsonl'), 'utf8').startsWith(metricsBefore));
    // A refused resume keeps the run's end (issue 26): it completed, at step 6.
    assert.equal(manifest.status, 'completed');
    assert.equal(manifest.step, 6);
    assert.equal(eventsOf(events, 'run_end').length, 1);

    const again = await train([config, '--run-dir', runDir, '--resume', 'never']);
    assert.equal(again.code, 0, again.stderr);
    const aside = readdirSync(ckpts).filter((n) => n.startsWith('previous-'));
    assert.equal(aside.length, 1);
    assert.deepEqual(
      snapshot(path.join(ckpts, aside[0])),
      new Map([...before].map(([k, v]) => [k, v])),
      'the unusable checkpoints are kept, byte for byte',
    );
    assert.deepEqual(
      readdirSync(ckpts)
        .filter((n) => n.startsWith('step-'))
        .sort(),
      ['step-00000002', 'step-00000004', 'step-00000006'],
    );
    const { events: all } = await readRun(runDir);
    assert.equal(eventsOf(all, 'run_start').at(-1)?.start_step ?? 0, 0);
  });

  it('--resume auto refuses a run that logged steps but left nothing to continue from, saying why, and leaves run.json as it was (issue 26, item 4)', async () => {
    const runDir = path.join(dir, 'run');
    const config = writeConfig(
      dir,
      smallConfig({ training: { max_steps: 6 }, checkpointing: { save_every_n_steps: 2, keep_last_n: 3 } }),
    );
    assert.equal((await train([config, '--run-dir', runDir])).code, 0);
    const ckpts = path.join(runDir, 'checkpoints');
    const manifestBefore = readFileSync(path.join(runDir, 'run.json'), 'utf8');
    assert.match(manifestBefore, /"status": "completed"/);
    const metrics = path.join(runDir, 'metrics.jsonl');
    const stepNames = () =>
      readdirSync(ckpts)
        .filter((n) => n.startsWith('step-'))
        .sort();
    const names = stepNames();
    assert.deepEqual(names, ['step-00000002', 'step-00000004', 'step-00000006']);
    // The three ways the probes left a folder with logged steps and nothing resumable.
    const elsewhere = path.join(dir, 'elsewhere');
    mkdirSync(elsewhere);
    const breakages: Array<[string, () => void, () => void, RegExp]> = [
      [
        'only unfinished writes',
        () => names.forEach((n) => renameSync(path.join(ckpts, n), path.join(ckpts, `.tmp-${n}-123`))),
        () => names.forEach((n) => renameSync(path.join(ckpts, `.tmp-${n}-123`), path.join(ckpts, n))),
        /holds only writes that never finished \(\.tmp-step-00000002-123, \.tmp-step-00000004-123, \.tmp-step-00000006-123\), which are never loaded/,
      ],
      [
        'every step-* a symbolic link',
        () =>
          names.forEach((n) => {
            renameSync(path.join(ckpts, n), path.join(elsewhere, n));
            symlinkSync(path.join(elsewhere, n), path.join(ckpts, n));
          }),
        () =>
          names.forEach((n) => {
            rmSync(path.join(ckpts, n));
            renameSync(path.join(elsewhere, n), path.join(ckpts, n));
          }),
        /holds symbolic links \(step-00000002, step-00000004, step-00000006\), not checkpoint folders of this run/,
      ],
      [
        'the checkpoints folder deleted',
        () => renameSync(ckpts, path.join(dir, 'moved-away')),
        () => renameSync(path.join(dir, 'moved-away'), ckpts),
        new RegExp(`the folder ${quote(ckpts)} does not exist \\(deleted\\?\\)`),
      ],
    ];
    for (const [what, breakIt, mend, why] of breakages) {
      breakIt();
      const metricsBefore = readFileSync(metrics, 'utf8');
      const r = await train([config, '--run-dir', runDir, '--resume', 'auto']);
      assert.equal(r.code, 1, `${what}: ${r.stderr}`);
      assert.match(
        r.stderr,
        new RegExp(
          `--resume auto: the run logged steps up to 6 \\(${quote(metrics)}\\) but there is no checkpoint to continue from: `,
        ),
        what,
      );
      assert.match(r.stderr, why, what);
      assert.match(
        r.stderr,
        /Nothing was started and nothing deleted\. To start over from step 0, replacing those steps, run with --resume never/,
        what,
      );
      assert.equal(
        readFileSync(path.join(runDir, 'run.json'), 'utf8'),
        manifestBefore,
        `${what}: run.json was rewritten`,
      );
      const { events } = await readRun(runDir);
      assert.equal(eventsOf(events, 'run_start').length, 1, `${what}: a run was started`);
      assert.equal(eventsOf(events, 'run_end').length, 1, `${what}: a second end was written`);
      assert.ok(readFileSync(metrics, 'utf8').startsWith(metricsBefore));
      mend();
    }
    assert.deepEqual(stepNames(), names, 'every checkpoint is where it was');
    // --resume never remains the way to start over.
    rmSync(ckpts, { recursive: true });
    const over = await train([config, '--run-dir', runDir, '--resume', 'never']);
    assert.equal(over.code, 0, over.stderr);
  });

  it('refuses a checkpoint from beyond training.max_steps instead of "completing" without a step', async () => {
    const runDir = path.join(dir, 'run');
    assert.equal(
      (
        await train([
          writeConfig(dir, smallConfig({ training: { max_steps: 4 }, checkpointing: { save_every_n_steps: 4 } })),
          '--run-dir',
          runDir,
        ])
      ).code,
      0,
    );
    const r = await train([
      writeConfig(dir, smallConfig({ training: { max_steps: 2 } }), 'shorter.json'),
      '--run-dir',
      runDir,
      '--resume',
      'auto',
    ]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(
      r.stderr,
      /step-00000004: saved at step 4, beyond training\.max_steps \(2\): raise training\.max_steps to continue it/,
    );
  });

  describe('on a full disk (an 8 MiB tmpfs)', () => {
    let disk: string;
    before(function () {
      disk = path.join(os.tmpdir(), `fsdp-full-disk-${process.pid}`);
      mkdirSync(disk, { recursive: true });
      const mount = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', disk], { encoding: 'utf8' });
      if (mount.status !== 0) {
        rmSync(disk, { recursive: true, force: true });
        // Mounting needs root (or CAP_SYS_ADMIN); without it there is no disk here that can be filled safely.
        this.skip();
      }
    });
    after(() => {
      if (existsSync(disk)) {
        spawnSync('umount', [disk]);
        rmSync(disk, { recursive: true, force: true });
      }
    });

    it('fails with errno and path, leaves run.json "failed" (disk full) and no temporary files, and resumes once there is room', async () => {
      const runDir = path.join(disk, 'run');
      const filler = path.join(disk, 'filler');
      const config = writeConfig(
        dir,
        smallConfig({ training: { max_steps: 8 }, checkpointing: { save_every_n_steps: 2, keep_last_n: 2 } }),
      );
      // How much one checkpoint of this config takes, measured on the ordinary disk.
      const probeDir = path.join(dir, 'probe');
      const probe = await train([
        writeConfig(
          dir,
          smallConfig({ training: { max_steps: 2 }, checkpointing: { save_every_n_steps: 2, keep_last_n: 2 } }),
          'probe.json',
        ),
        '--run-dir',
        probeDir,
      ]);
      assert.equal(probe.code, 0, probe.stderr);
      const checkpointBytes = bytesOnTmpfs(path.join(probeDir, 'checkpoints', 'step-00000002'));
      // The disk is filled (another job's output) before the run starts, leaving room for the logs
      // and the first checkpoint but not a second: the save at step 4 is the one that fails,
      // whatever the speed of this machine.
      const { bavail, bsize } = statfsSync(disk);
      const room = Math.round(1.5 * checkpointBytes) + 64 * 1024;
      const fill = spawnSync('fallocate', ['-l', String(bavail * bsize - room), filler], { encoding: 'utf8' });
      assert.equal(fill.status, 0, fill.stderr);
      const r = await train([config, '--run-dir', runDir]);
      assert.equal(r.code, 1, r.stderr);
      // The second save (step 4) found no room.
      assert.match(
        r.stderr,
        new RegExp(
          `${quote(runDir)}/checkpoints/\\.tmp-step-00000004-\\d+/rank-00000\\.bin: write failed: No space left on device`,
        ),
      );
      assert.doesNotMatch(r.stderr, / {4}at |Error: ENOSPC/);
      const manifest = JSON.parse(readFileSync(path.join(runDir, 'run.json'), 'utf8')) as {
        status: string;
        end_reason: string;
      };
      assert.equal(manifest.status, 'failed');
      assert.match(manifest.end_reason, /^disk full: .*No space left on device/);
      assert.deepEqual(
        readdirSync(runDir).filter((n) => n.includes('.tmp')),
        [],
        'a temporary run.json was left behind',
      );
      const left = readdirSync(path.join(runDir, 'checkpoints'));
      assert.deepEqual(left, ['step-00000002'], 'the failed save was not cleaned up');
      // Room again: the run resumes from its last checkpoint and completes.
      rmSync(filler);
      const resumed = await train([config, '--run-dir', runDir, '--resume', 'auto']);
      assert.equal(resumed.code, 0, resumed.stderr);
      const { manifest: after } = await readRun(runDir);
      assert.equal(after.status, 'completed');
      assert.equal(after.step, 8);
    });
  });
});
