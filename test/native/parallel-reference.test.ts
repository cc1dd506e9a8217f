// The native trainer held to PyTorch 2 (issue 23): test/fixtures/reference/parallel/fp32.json (made by
// test/reference/make_parallel_fixture.py with torch 2.13 under torchrun) holds 20 AdamW steps in
// float32 of the same GPT from the same weights (the native trainer's step-0 checkpoint, exported as a
// Hugging Face GPT-2 folder) on the same batches, at 1 and 2 ranks, with DistributedDataParallel, FSDP2
// fully_shard and fully_shard(reshard_after_forward=False). The native trainer runs each with the
// strategy mapped to it (NO_SHARD, FULL_SHARD, SHARD_GRAD_OP) through `fsdp-train` (mpirun for 2
// ranks): every step's loss and gradient norm within 1e-5 (relative), the learning rate within 1e-12.
// Its step-0 weights must still be the ones PyTorch started from (the export's CRC-32), or the fixture
// must be regenerated. (float64, the tight check, stays in reference-fixtures.test.ts.)
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import { encodeTokenFile } from '../../core/data/token-file';
import { repoRoot } from './native-build';
import { eventsOf, readRun, tempDir, train, writeConfig } from './train-runs';

const FIXTURE = path.join(repoRoot, 'test', 'fixtures', 'reference', 'parallel', 'fp32.json');
const TOLERANCE = 1e-5;

interface Step {
  step: number;
  loss: number;
  grad_norm: number;
  lr: number;
}
interface ParallelFixture {
  format: string;
  version: number;
  made_by: { torch: string; command: string };
  config: Record<string, Record<string, unknown>> & { model: { vocab_size: number } };
  global_batch: number;
  tokens: { ids: number[] };
  initial_weights: { safetensors_crc32: number };
  runs: Array<{ world_size: number; sharding_strategy: string; pytorch: string; steps: Step[] }>;
}

const relative = (a: number, b: number) => Math.abs(a - b) / Math.abs(b);

describe('the native trainer against PyTorch 2 at 1 and 2 ranks (test/fixtures/reference/parallel/fp32.json)', function () {
  this.timeout(600_000);
  const fixture = JSON.parse(readFileSync(FIXTURE, 'utf8')) as ParallelFixture;
  let dir: string;
  let tokens: string;
  before(() => {
    dir = tempDir('parallel-ref');
    tokens = path.join(dir, 'fortunes.tok');
    writeFileSync(
      tokens,
      encodeTokenFile(Uint16Array.from(fixture.tokens.ids), fixture.config.model.vocab_size, 'byte'),
    );
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('was made by PyTorch 2 for every strategy at 1 and 2 ranks', () => {
    assert.equal(fixture.format, 'fsdp-studio/parallel-reference');
    assert.match(fixture.made_by.torch, /^2\./);
    assert.deepEqual(
      fixture.runs.map((r) => `${r.world_size} ${r.sharding_strategy} ${r.pytorch}`),
      [
        '1 NO_SHARD ddp',
        '1 FULL_SHARD fully_shard',
        '1 SHARD_GRAD_OP fully_shard_keep',
        '2 NO_SHARD ddp',
        '2 FULL_SHARD fully_shard',
        '2 SHARD_GRAD_OP fully_shard_keep',
      ],
    );
    for (const r of fixture.runs) assert.equal(r.steps.length, 20);
  });

  for (const [index, expected] of (JSON.parse(readFileSync(FIXTURE, 'utf8')) as ParallelFixture).runs.entries()) {
    it(`${expected.sharding_strategy} on ${expected.world_size} rank(s) = PyTorch's ${expected.pytorch}: losses and gradient norms within ${TOLERANCE}`, async () => {
      const config = structuredClone(fixture.config) as Record<string, Record<string, unknown>>;
      config.data = { ...config.data, train: tokens };
      config.training = { ...config.training, batch_size_per_gpu: fixture.global_batch / expected.world_size };
      config.fsdp = { sharding_strategy: expected.sharding_strategy };
      config.launch = { ...config.launch, nproc_per_node: expected.world_size };
      const name = `${expected.world_size}-${expected.sharding_strategy}`;
      const runDir = path.join(dir, name);
      const r = await train([writeConfig(dir, config, `${name}.json`), '--run-dir', runDir]);
      assert.equal(r.code, 0, r.stderr);

      if (index === 0) {
        // The weights PyTorch started from are still this runtime's step-0 weights.
        const hf = path.join(dir, 'hf');
        const exported = await train(['export', path.join(runDir, 'checkpoints', 'step-00000000'), '--hf', hf]);
        assert.equal(exported.code, 0, exported.stderr);
        assert.equal(
          crc32(readFileSync(path.join(hf, 'model.safetensors'))),
          fixture.initial_weights.safetensors_crc32,
          "the runtime's initial weights changed since the fixture was made: regenerate it (npm run fixtures:reference)",
        );
      }

      // The run's own step events (those with a rank are each rank's memory).
      const steps = eventsOf((await readRun(runDir)).events, 'step').filter((s) => s.rank === undefined);
      assert.deepEqual(
        steps.map((s) => s.step),
        expected.steps.map((s) => s.step),
      );
      const worst = { loss: 0, grad_norm: 0, lr: 0 };
      for (const [i, want] of expected.steps.entries()) {
        const got = steps[i];
        for (const key of ['loss', 'grad_norm', 'lr'] as const)
          worst[key] = Math.max(worst[key], relative(got[key] as number, want[key]));
      }
      console.log(
        `      worst relative difference: loss ${worst.loss.toExponential(2)}, grad_norm ${worst.grad_norm.toExponential(2)}, lr ${worst.lr.toExponential(2)}`,
      );
      assert.ok(worst.loss <= TOLERANCE, `loss differs by ${worst.loss}`);
      assert.ok(worst.grad_norm <= TOLERANCE, `gradient norm differs by ${worst.grad_norm}`);
      assert.ok(worst.lr <= 1e-12, `learning rate differs by ${worst.lr}`);
    });
  }
});
