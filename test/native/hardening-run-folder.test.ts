// Issue 19, items 3, 4, 8 and 10, through the real CLI and trainer: what a run folder holds stays
// consistent whatever happened to it before — a torn last line of metrics.jsonl, another trainer on
// the same folder, checkpoints that are all unusable, a full disk.
import assert from 'node:assert/strict';
import { appendFileSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { eventsOf, readRun, smallConfig, tempDir, train, writeConfig } from './train-runs';

describe('fsdp-train: the run folder stays consistent', function () {
  this.timeout(180_000);
  let dir: string;
  beforeEach(() => (dir = tempDir('hardening-run-folder')));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('a resumed trainer ends a torn last line of metrics.jsonl before its first event', async () => {
    const runDir = path.join(dir, 'run');
    const config = writeConfig(dir, smallConfig({ training: { max_steps: 4 }, checkpointing: { save_every_n_steps: 2 } }));
    assert.equal((await train([config, '--run-dir', runDir])).code, 0);
    // A writer killed mid-line left half an event behind.
    appendFileSync(path.join(runDir, 'metrics.jsonl'), '{"v":1,"type":"step","time":17');
    const longer = writeConfig(dir, smallConfig({ training: { max_steps: 6 }, checkpointing: { save_every_n_steps: 2 } }), 'longer.json');
    const r = await train([longer, '--run-dir', runDir, '--resume', 'auto']);
    assert.equal(r.code, 0, r.stderr);
    const { events, problems } = await readRun(runDir);
    assert.deepEqual(problems.map((p) => p.excerpt), ['{"v":1,"type":"step","time":17'], 'the torn line is one bad line of its own');
    assert.equal(eventsOf(events, 'run_start').length, 2, 'the resumed run_start was not merged into the torn line');
    assert.deepEqual(eventsOf(events, 'step').map((e) => e.step), [1, 2, 3, 4, 5, 6]);
    assert.ok(readFileSync(path.join(runDir, 'metrics.jsonl'), 'utf8').endsWith('\n'));
  });
});
