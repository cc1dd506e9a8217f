// samples/tiny-cpu.yaml learns: its validation loss ends below the corpus's unigram entropy (the
// loss of the best model that ignores context), read from the .stats.json beside the data, and its
// loss has no spike the watch would warn of. How
// fast it gets there is measured by `npm run bench:cpu`, not asserted here.
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { RunHistory } from '../../core/runs/run-history';
import { SpikeFinder } from '../../core/runs/spikes';
import { repoRoot } from './native-build';
import { eventsOf, readRun, sampleData, tempDir, train } from './train-runs';

describe('native runtime: samples/tiny-cpu.yaml converges', function () {
  this.timeout(600_000);
  let dir: string;
  before(() => (dir = tempDir('tiny-cpu')));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('reaches a validation loss below the unigram entropy of the corpus', async () => {
    const stats = JSON.parse(readFileSync(path.join(sampleData, 'fortunes-byte-val.stats.json'), 'utf8')) as {
      unigram_entropy_nats: number;
    };
    const runDir = path.join(dir, 'run');
    const r = await train([path.join(repoRoot, 'samples', 'tiny-cpu.yaml'), '--run-dir', runDir]);
    assert.equal(r.code, 0, r.stderr);
    const { events, problems } = await readRun(runDir);
    assert.deepEqual(problems, []);
    const evals = eventsOf(events, 'eval');
    const first = eventsOf(events, 'step')[0];
    assert.ok(
      first.loss! > stats.unigram_entropy_nats,
      `the first step's loss ${first.loss} is already below the entropy`,
    );
    const last = evals.at(-1)!;
    assert.ok(
      last.val_loss! < stats.unigram_entropy_nats,
      `final val_loss ${last.val_loss} is not below ${stats.unigram_entropy_nats}`,
    );
    // The sample's first run gives no loss spike to warn of (with 10 warmup steps it jumped 2.2× at step 15).
    const history = new RunHistory();
    for (const e of events) history.apply(e);
    const spikes = new SpikeFinder(history).spikes().filter((sp) => sp.alert !== 'marker');
    assert.deepEqual(
      spikes.map((sp) => `${sp.metric} at step ${sp.step}: ${sp.value}`),
      [],
    );
  });
});
