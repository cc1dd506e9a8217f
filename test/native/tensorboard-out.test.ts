// The native runtime's TensorBoard event files (native/src/metrics/tensorboard_writer.cc), read back
// with the same decoder the editor uses for a person's own runs: every step's scalars under the
// editor's tag names, equal (as float32) to what metrics.jsonl says, and `fsdp-runs show` gives the
// same tags for both; logging.tensorboard: false writes none. Real CLI, real native trainer.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { tensorBoardDecoder } from '../../runs/watch/decoders/tensorboard/tensorboard-decoder';
import { NATIVE_TAGS } from '../../core/runs/scalar-tags';
import { repoRoot } from './native-build';
import { eventsOf, readRun, smallConfig, tempDir, train, writeConfig } from './train-runs';

function eventFiles(runDir: string): string[] {
  return readdirSync(runDir).filter((n) => n.startsWith('events.out.tfevents.'));
}

function show(where: string): {
  tags: Record<
    string,
    { count: number; first_step: number; last_step: number; last_value: number | null; last_wall_time: number | null }
  >;
  problems: unknown[];
} {
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', path.join(repoRoot, 'cli', 'fsdp-runs.ts'), 'show', where, '--json'],
    { encoding: 'utf8', cwd: repoRoot },
  );
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

describe('native runs write TensorBoard event files', function () {
  this.timeout(120_000);
  let dir: string;
  before(() => (dir = tempDir('tbout')));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("every step and evaluation as scalars under the editor's tag names, equal to metrics.jsonl", async () => {
    const runDir = path.join(dir, 'with');
    const config = writeConfig(dir, smallConfig({ logging: { eval_every_n_steps: 4, eval_batches: 1 } }), 'with.json');
    const r = await train([config, '--run-dir', runDir]);
    assert.equal(r.code, 0, r.stderr);
    const files = eventFiles(runDir);
    assert.equal(files.length, 1);
    assert.match(files[0], /^events\.out\.tfevents\.\d+\.[^.]+.*\.\d+\.0$/);
    const bytes = readFileSync(path.join(runDir, files[0]));
    const batch = tensorBoardDecoder()(0).push(bytes);
    assert.deepEqual(batch.problems, [], "every record's CRCs hold and every Event decodes");
    assert.equal(batch.offset, bytes.length);
    const { events } = await readRun(runDir);
    const steps = eventsOf(events, 'step');
    assert.equal(steps.length, 12);
    const byTag = new Map<string, Array<[number, number]>>();
    for (const s of batch.entries) byTag.set(s.tag, [...(byTag.get(s.tag) ?? []), [s.step, s.value]]);
    const expected = [
      NATIVE_TAGS.val_loss,
      NATIVE_TAGS.grad_norm,
      NATIVE_TAGS.loss,
      NATIVE_TAGS.lr,
      NATIVE_TAGS.step_ms,
      NATIVE_TAGS.tokens_per_s,
      ...(steps[0].mfu !== undefined ? [NATIVE_TAGS.mfu] : []),
    ];
    assert.deepEqual([...byTag.keys()].sort(), expected.sort());
    assert.deepEqual(
      byTag.get('train/loss'),
      steps.map((s) => [s.step, Math.fround(s.loss!)]),
    );
    assert.deepEqual(
      byTag.get('train/lr'),
      steps.map((s) => [s.step, Math.fround(s.lr)]),
    );
    assert.deepEqual(
      byTag.get('eval/loss'),
      eventsOf(events, 'eval').map((e) => [e.step, Math.fround(e.val_loss!)]),
    );
    const first = batch.entries.find((e) => e.tag === 'train/loss')!;
    assert.ok(Math.abs(first.wallTime - steps[0].time) < 1, 'wall time of the step');

    // fsdp-runs show: the run folder (metrics.jsonl) and its event file alone give the same tags.
    const fromRun = show(runDir);
    const tbOnly = path.join(dir, 'tb-only');
    spawnSync('mkdir', ['-p', tbOnly]);
    spawnSync('cp', [path.join(runDir, files[0]), tbOnly]);
    const fromEvents = show(tbOnly);
    assert.deepEqual(Object.keys(fromEvents.tags).sort(), Object.keys(fromRun.tags).sort());
    for (const [tag, s] of Object.entries(fromRun.tags)) {
      const t = fromEvents.tags[tag];
      assert.deepEqual([t.count, t.first_step, t.last_step], [s.count, s.first_step, s.last_step], tag);
      assert.equal(t.last_value, Math.fround(s.last_value!), tag);
    }
    assert.deepEqual(fromRun.problems, []);
  });

  it('logging.tensorboard: false writes metrics.jsonl only', async () => {
    const runDir = path.join(dir, 'without');
    const config = writeConfig(
      dir,
      smallConfig({ training: { max_steps: 3 }, logging: { tensorboard: false } }),
      'without.json',
    );
    const r = await train([config, '--run-dir', runDir]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(eventFiles(runDir), []);
  });
});
