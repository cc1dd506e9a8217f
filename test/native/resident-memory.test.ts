// Step events carry the process's resident memory (mem_rss) beside the allocator's peak, so the
// dashboard can draw what the operating system counts apart from what the plan counts.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { eventsOf, readRun, smallConfig, tempDir, train, writeConfig } from './train-runs';

describe('native runtime: resident memory in step events', function () {
  this.timeout(120_000);
  let dir: string;
  before(() => (dir = tempDir('resident')));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('reports the RSS of the process with every step, above the allocator peak (libraries, code, buffers)', async () => {
    const runDir = path.join(dir, 'run');
    const r = await train([
      writeConfig(dir, smallConfig({ training: { max_steps: 3 } }), 'config.json'),
      '--run-dir',
      runDir,
    ]);
    assert.equal(r.code, 0, r.stderr);
    const steps = eventsOf((await readRun(runDir)).events, 'step');
    assert.equal(steps.length, 3);
    for (const s of steps) {
      assert.equal(typeof s.mem_rss, 'number', `step ${s.step} has mem_rss`);
      assert.ok(s.mem_rss! > s.mem_peak, `step ${s.step}: RSS ${s.mem_rss} above the allocator's ${s.mem_peak}`);
      assert.ok(s.mem_rss! < 8 * 2 ** 30, `step ${s.step}: RSS ${s.mem_rss} is a process's, not garbage`);
      assert.equal(s.mem_rss! % 4096, 0, 'whole pages');
    }
  });
});
