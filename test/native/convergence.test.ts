// samples/tiny-cpu.yaml learns: its validation loss ends below the corpus's unigram entropy (the
// loss of the best model that ignores context), read from the .stats.json beside the data. How
// fast it gets there is measured by `npm run bench:cpu`, not asserted here.
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from './native-build';
import { eventsOf, readRun, sampleData, tempDir, train } from './train-runs';

describe('native runtime: samples/tiny-cpu.yaml converges', function () {
  this.timeout(600_000);
  let dir: string;
  before(() => (dir = tempDir('tiny-cpu')));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('reaches a validation loss below the unigram entropy of the corpus', async () => {
    const stats = JSON.parse(readFileSync(path.join(sampleData, 'fortunes-byte-val.stats.json'), 'utf8')) as { unigram_entropy_nats: number };
    const runDir = path.join(dir, 'run');
    const r = await train([path.join(repoRoot, 'samples', 'tiny-cpu.yaml'), '--run-dir', runDir]);
    assert.equal(r.code, 0, r.stderr);
    const { events, problems } = await readRun(runDir);
    assert.deepEqual(problems, []);
    const evals = eventsOf(events, 'eval');
    const first = eventsOf(events, 'step')[0];
    assert.ok(first.loss! > stats.unigram_entropy_nats, `the first step's loss ${first.loss} is already below the entropy`);
    const last = evals.at(-1)!;
    assert.ok(last.val_loss! < stats.unigram_entropy_nats, `final val_loss ${last.val_loss} is not below ${stats.unigram_entropy_nats}`);
  });
});
