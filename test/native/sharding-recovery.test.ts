// Sharded checkpoints and what they are for: each rank writes its shard and rank 0 the manifest;
// a checkpoint saved by 4 ranks resumes on 2 ranks and on 1 (resharded on load) with the
// uninterrupted run's continuation; an export makes one full checkpoint of it; and a rank that is
// killed mid-run ends the whole job quickly with an error naming it, after which --resume auto
// continues from the last complete checkpoint to the losses of a run never interrupted.
import assert from 'node:assert/strict';
import { cpSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { recordDuration } from '../harness/durations';
import { eventsOf, rankPid, readRun, startTrain, tempDir, train, writeConfig } from './train-runs';
import { maxRelativeDifference, outcomeOf, runSharded, shardedConfig, type ShardedRun } from './sharding-runs';

const STEPS = 8;
/** Checkpoints every 2 steps, all of them kept: the tests resume from step 4. */
const withCheckpoints = (run: ShardedRun): ShardedRun => ({
  ...run,
  extra: { ...run.extra, training: { max_steps: STEPS }, checkpointing: { save_every_n_steps: 2, keep_last_n: 10 } },
});

function stepsAfter(step: number, losses: Map<number, number | null>): Map<number, number | null> {
  return new Map([...losses].filter(([s]) => s > step));
}

describe('sharded checkpoints: resharding on load, export, and a rank killed mid-run', function () {
  this.timeout(600_000);
  let dir: string;
  let reference: Map<number, number | null>;
  let referenceDir: string;
  const step4 = () => path.join(referenceDir, 'checkpoints', 'step-00000004');

  before(async () => {
    dir = tempDir('sharded-ckpt');
    referenceDir = await runSharded(dir, 'four-ranks', withCheckpoints({ ranks: 4, strategy: 'FULL_SHARD' }));
    reference = (await outcomeOf(referenceDir)).losses;
    assert.equal(reference.size, STEPS);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('writes one file per rank and a manifest naming them, from rank 0', () => {
    const files = readdirSync(step4()).sort();
    assert.deepEqual(files, ['manifest.json', 'rank-00000.bin', 'rank-00001.bin', 'rank-00002.bin', 'rank-00003.bin']);
    const manifest = JSON.parse(readFileSync(path.join(step4(), 'manifest.json'), 'utf8')) as {
      world_size: number;
      files: Array<{ name: string; rank: number }>;
    };
    assert.equal(manifest.world_size, 4);
    assert.deepEqual(
      manifest.files.map((f) => f.rank),
      [0, 1, 2, 3],
    );
  });

  for (const [ranks, strategy] of [
    [2, 'FULL_SHARD'],
    [1, 'NO_SHARD'],
    [2, 'SHARD_OPTIMIZER'],
  ] as const) {
    it(`resumes the 4-rank checkpoint on ${ranks} rank${ranks > 1 ? 's' : ''} (${strategy}) with the uninterrupted continuation`, async () => {
      const runDir = await runSharded(
        dir,
        `resume-${ranks}-${strategy}`,
        withCheckpoints({ ranks, strategy, args: ['--resume', step4()] }),
      );
      const { events, losses } = await outcomeOf(runDir);
      assert.equal(eventsOf(events, 'run_start')[0].start_step, 4);
      assert.deepEqual([...losses.keys()], [5, 6, 7, 8]);
      const d = maxRelativeDifference(stepsAfter(4, reference), losses);
      assert.ok(d <= 1e-6, `largest relative difference ${d}`);
    });
  }

  it('exports the sharded checkpoint as one full checkpoint that resumes bitwise as the sharded one', async () => {
    const out = path.join(dir, 'exported');
    const r = await train(['--export-checkpoint', step4(), out]);
    assert.equal(r.code, 0, r.stderr);
    const exported = path.join(out, 'step-00000004');
    assert.deepEqual(readdirSync(exported).sort(), ['manifest.json', 'rank-00000.bin']);
    assert.equal(JSON.parse(readFileSync(path.join(exported, 'manifest.json'), 'utf8')).world_size, 1);
    const fromExport = (
      await outcomeOf(await runSharded(dir, 'from-export', withCheckpoints({ ranks: 1, args: ['--resume', exported] })))
    ).losses;
    const fromShards = (
      await outcomeOf(await runSharded(dir, 'from-shards', withCheckpoints({ ranks: 1, args: ['--resume', step4()] })))
    ).losses;
    assert.deepEqual(fromExport, fromShards);
  });

  it("refuses, on every rank, a checkpoint that lost a rank's file, naming the file", async () => {
    const damaged = path.join(dir, 'damaged', 'step-00000004');
    cpSync(step4(), damaged, { recursive: true });
    rmSync(path.join(damaged, 'rank-00003.bin'));
    const config = writeConfig(
      dir,
      shardedConfig(withCheckpoints({ ranks: 2, strategy: 'FULL_SHARD' })),
      'damaged.json',
    );
    const r = await train([config, '--nproc', '2', '--run-dir', path.join(dir, 'damaged-run'), '--resume', damaged]);
    assert.equal(r.code, 1, r.stderr);
    assert.ok(r.stderr.includes(`${path.join(damaged, 'rank-00003.bin')}: missing`), r.stderr);
    assert.match(r.stderr, /not loaded/);
    // A refused resume starts nothing (issue 26): no run_start or run_end; the refusal is logged
    // naming the file, and fsdp-train marks this new folder's run.json failed.
    const { events, manifest } = await readRun(path.join(dir, 'damaged-run'));
    assert.deepEqual(eventsOf(events, 'run_start').length + eventsOf(events, 'run_end').length, 0);
    assert.ok(
      eventsOf(events, 'log').some((e) => e.level === 'error' && e.msg.includes('rank-00003.bin: missing')),
      JSON.stringify(events),
    );
    assert.equal(manifest.status, 'failed');
  });

  it('ends the job naming a killed rank, then resumes to the uninterrupted losses', async () => {
    const runDir = path.join(dir, 'killed');
    const config = writeConfig(
      dir,
      shardedConfig(withCheckpoints({ ranks: 4, strategy: 'FULL_SHARD' })),
      'killed.json',
    );
    let killedAt = 0;
    let victim = 0;
    const { done } = startTrain([config, '--nproc', '4', '--oversubscribe', '--run-dir', runDir], (line) => {
      if (killedAt || !line.includes('"type":"step"') || !line.includes('"step":5,')) return;
      // Rank 2's pid, from the run_start every rank reported to.
      victim = rankPid(runDir, 2);
      killedAt = Date.now();
      process.kill(victim, 'SIGKILL');
    });
    const r = await done;
    assert.ok(killedAt, `the run ended before step 5: ${r.stderr}`);
    // The condition is that the job ends naming the rank; how long it took is the benchmark's.
    recordDuration('sharding-recovery: the job ended after rank 2 was SIGKILLed', killedAt);
    assert.notEqual(r.code, 0);
    // The terminal's last line is the end run.json records: mpirun may drop rank 0's own line saying
    // it as it aborts the job (one loaded run in eight: the record named rank 2, the terminal did not).
    const lastLine = r.stderr.trimEnd().split('\n').at(-1) ?? '';
    assert.match(lastLine, new RegExp(`^fsdp-train: run killed failed: rank 2 \\(pid ${victim} on [^)]+\\) is gone`));
    const { events, manifest } = await readRun(runDir);
    const end = eventsOf(events, 'run_end').at(-1)!;
    assert.equal(end.status, 'failed');
    assert.match(end.reason ?? '', /rank 2 .*is gone/);
    assert.equal(manifest.status, 'failed');
    assert.match(manifest.end_reason ?? '', /rank 2/);

    // The kill is sent when step 5's line is read; the ranks may have saved step 6 by the time it
    // lands (a loaded machine), so the resume starts from the last checkpoint the stream recorded.
    const saved = eventsOf(events, 'checkpoint').map((c) => c.step);
    const lastSaved = saved.at(-1);
    assert.ok(lastSaved !== undefined && lastSaved >= 4, `a checkpoint at step 4 or later: ${JSON.stringify(saved)}`);

    const resumed = await train([config, '--nproc', '4', '--oversubscribe', '--run-dir', runDir, '--resume', 'auto']);
    assert.equal(resumed.code, 0, resumed.stderr);
    const { events: all, losses } = await outcomeOf(runDir);
    assert.equal(eventsOf(all, 'run_start').at(-1)!.start_step, lastSaved);
    // Same ranks, same strategy: the continuation is the uninterrupted run's, bit for bit.
    assert.deepEqual(losses, reference);
    assert.equal((await readRun(runDir)).manifest.status, 'completed');
  });
});
