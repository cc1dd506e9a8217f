// Issue 19, items 5 and 10, through the real fsdp-train: more ranks than cores are refused unless
// asked for; a second Ctrl-C aborts as the usage text says, a multi-rank job's every process
// included (even a frozen rank); `learning_rate: .inf` is reported at the user's file (not as
// "got null" in the run folder's config.json); a runs_dir that is a file is reported by name.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { recordDuration } from '../harness/durations';
import { until } from '../harness/until';
import { eventsOf, rankPidsOf, readRun, smallConfig, startTrain, tempDir, train, writeConfig } from './train-runs';

describe('fsdp-train: signals, non-finite numbers and a runs_dir in the way', function () {
  this.timeout(180_000);
  let dir: string;
  beforeEach(() => (dir = tempDir('hardening-cli')));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('aborts on a second Ctrl-C instead of finishing the step and saving (exit 130, run.json says so)', async () => {
    const runDir = path.join(dir, 'run');
    // Steps long enough that the graceful stop (finish the step, save) cannot end before the second signal.
    const config = writeConfig(
      dir,
      smallConfig({
        model: { d_model: 256, n_layers: 6, n_heads: 4, max_seq_len: 128 },
        data: { seq_len: 128 },
        training: { max_steps: 100_000, batch_size_per_gpu: 8 },
        checkpointing: { save_every_n_steps: 0, save_final: true },
      }),
    );
    let sent = 0;
    let stepsAtFirst = 0;
    // A terminal's Ctrl-C goes to the foreground process group: the CLI and the runtime together.
    const { child, done } = startTrain(
      [config, '--run-dir', runDir],
      (line, c) => {
        if (sent > 0 || !line.includes('"type":"step"')) return;
        sent = 1;
        stepsAtFirst = Number(/"step":(\d+)/.exec(line)![1]);
        // The runtime frozen, the graceful stop cannot finish the step before the second Ctrl-C, however
        // fast the machine (a fixed 150 ms between the two lost that race on a quiet one); SIGKILL, the
        // abort, ends a stopped process too.
        process.kill(rankPidsOf(runDir)[0], 'SIGSTOP');
        let said = '';
        c.stderr!.on('data', (d: Buffer) => {
          said += d;
          if (sent !== 1 || !/SIGINT: stopping after the current step/.test(said)) return;
          sent = 2; // the first Ctrl-C has been taken: the second is the abort
          process.kill(-c.pid!, 'SIGINT');
        });
        process.kill(-c.pid!, 'SIGINT');
      },
      { detached: true },
    );
    const r = await done;
    assert.equal(sent, 2, r.stderr);
    assert.equal(r.code, 130, r.stderr);
    assert.match(r.stderr, /SIGINT: stopping after the current step \(again to abort\)[\s\S]*SIGINT again: aborting/);
    const { events, manifest } = await readRun(runDir);
    // The runtime wrote no end of its own; its owner's stand-in (issue 41 item 1) names the abort.
    const ends = eventsOf(events, 'run_end');
    assert.deepEqual(
      ends.filter((e) => e.stand_in !== true),
      [],
      'the runtime was aborted, not stopped gracefully',
    );
    assert.deepEqual(
      ends.map((e) => [e.status, e.reason]),
      [['failed', 'aborted by a second SIGINT']],
    );
    assert.deepEqual(eventsOf(events, 'checkpoint'), []);
    assert.ok(eventsOf(events, 'step').length <= stepsAtFirst + 1);
    assert.equal(manifest.status, 'failed');
    assert.equal((manifest as { end_reason?: string }).end_reason, 'aborted by a second SIGINT');
    assert.equal(child.exitCode, 130);
  });

  it('refuses more ranks than this machine has cores unless --oversubscribe asks for them', async () => {
    const cores = os.availableParallelism();
    for (const n of [cores + 1, 1000]) {
      const started = Date.now();
      const runDir = path.join(dir, `run-${n}`);
      const r = await train([writeConfig(dir, smallConfig()), '--nproc', String(n), '--run-dir', runDir]);
      assert.equal(r.code, 2, r.stderr);
      assert.equal(
        r.stderr.trim(),
        `fsdp-train: launch.nproc_per_node is ${n} but this machine has ${cores} cores: ranks beyond that share cores and slow the whole job down. Use at most ${cores}, or run them anyway with --oversubscribe (launch.oversubscribe: true)`,
      );
      // Refused before anything started (the condition); how fast is the benchmark's business.
      assert.ok(!existsSync(runDir), `nothing was started for ${n} ranks: ${runDir} exists`);
      recordDuration(`hardening-cli: refusal of ${n} ranks on ${cores} cores`, started);
    }
    const asked = await train([
      writeConfig(dir, smallConfig({ training: { max_steps: 2 } })),
      '--nproc',
      String(cores + 1),
      '--oversubscribe',
      '--run-dir',
      path.join(dir, 'asked'),
    ]);
    assert.equal(asked.code, 0, asked.stderr);
  });

  it('caps --oversubscribe at 8 ranks a core, naming the cap, instead of starting 1000 processes (issue 26, item 7)', async () => {
    const cores = os.availableParallelism();
    const started = Date.now();
    const runDir = path.join(dir, 'run-1000');
    const r = await train([writeConfig(dir, smallConfig()), '--nproc', '1000', '--oversubscribe', '--run-dir', runDir]);
    assert.equal(r.code, 2, r.stderr);
    assert.equal(
      r.stderr.trim(),
      `fsdp-train: launch.nproc_per_node is 1000, more than --oversubscribe allows here: at most ${8 * cores} ranks (8 per core; this machine has ${cores} core${cores === 1 ? '' : 's'})`,
    );
    assert.ok(!existsSync(runDir), 'nothing was started');
    recordDuration('hardening-cli: refusal of 1000 ranks with --oversubscribe', started);
  });

  // A second SIGTERM is Stop's again, the same stop (issue 41: test/native/run-faults.test.ts); a second Ctrl-C aborts.
  it('aborts a multi-rank job on a second Ctrl-C, ending every process of it, a frozen rank included', async () => {
    const runDir = path.join(dir, 'job');
    const config = writeConfig(
      dir,
      smallConfig({ training: { max_steps: 100_000 }, fsdp: { sharding_strategy: 'FULL_SHARD' } }),
    );
    let pids: number[] = [];
    let signalled = false;
    const { child, done } = startTrain([config, '--nproc', '2', '--run-dir', runDir], (line, c) => {
      if (signalled || !line.includes('"type":"step"') || !line.includes('"step":3,')) return;
      signalled = true;
      pids = rankPidsOf(runDir);
      process.kill(pids.at(-1)!, 'SIGSTOP'); // the last rank freezes: a graceful stop cannot finish
      c.kill('SIGINT');
      setTimeout(() => c.kill('SIGINT'), 500);
    });
    const r = await done;
    assert.ok(signalled, r.stderr);
    assert.equal(r.code, 130, r.stderr);
    assert.match(r.stderr, /SIGINT again: aborting the job/);
    const ranks = pids;
    assert.ok(ranks.length >= 2, JSON.stringify(pids));
    await until('every rank of the job has ended', () => ranks.every((pid) => !alive(pid)), 20_000);
    assert.equal(child.exitCode, 130);
  });

  it("reports learning_rate: .inf at the line of the user's file", async () => {
    const file = path.join(dir, 'inf.fsdp.yaml');
    writeFileSync(
      file,
      `model: {d_model: 32, n_layers: 2, n_heads: 2, vocab_size: 256, max_seq_len: 32}\ndata: {train: x.tok}\ntraining:\n  batch_size_per_gpu: 4\n  max_steps: 5\n  learning_rate: .inf\n`,
    );
    const r = await train([file, '--run-dir', path.join(dir, 'run')]);
    assert.equal(r.code, 2);
    assert.equal(
      r.stderr.trim(),
      `${path.relative(process.cwd(), file)}:6:18 training.learning_rate: must be a finite number, got .inf (infinity)`,
    );
    const set = await train([
      writeConfig(dir, smallConfig()),
      '--set',
      'training.learning_rate=-.inf',
      '--run-dir',
      path.join(dir, 'run'),
    ]);
    assert.equal(set.code, 2);
    assert.match(set.stderr, /--set training\.learning_rate: must be a finite number, got -\.inf \(minus infinity\)/);
  });

  it('refuses a runs_dir that is a file, naming it (no uncaught ENOTDIR)', async () => {
    const runs = path.join(dir, 'runs');
    writeFileSync(runs, 'not a folder');
    for (const extra of [[], ['--resume', 'auto']]) {
      const r = await train([writeConfig(dir, smallConfig({ logging: { runs_dir: runs } })), ...extra]);
      assert.equal(r.code, 2, r.stderr);
      assert.doesNotMatch(r.stderr, / {4}at |Error: ENOTDIR/);
      assert.match(
        r.stderr,
        new RegExp(
          `^fsdp-train: cannot create the run folder .* \\(logging\\.runs_dir\\): ${runs.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}.*: a file is in the way where a folder must be \\(ENOTDIR\\)`,
        ),
      );
    }
  });
});

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
