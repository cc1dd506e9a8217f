// The decoder family held to transformers under FSDP2 (issue 35 item 5):
// test/fixtures/reference/parallel/decoder-fp32.json (made by
// test/reference/make_decoder_parallel_fixture.py with torch 2.13 and transformers 5.24 under torchrun)
// holds, for a tiny Llama (GQA 4:2, Llama 3 rope scaling, untied) and a tiny Qwen3 (q/k norm, head_dim
// apart from d_model / n_heads, tied), 20 float32 AdamW steps of transformers' LlamaForCausalLM /
// Qwen3ForCausalLM from the native trainer's step-0 weights (exported with fsdp-train export --hf) on
// the same batches, at 1 and 2 ranks, with FSDP2 fully_shard and fully_shard(reshard_after_forward=False).
// The native trainer runs each with FULL_SHARD / SHARD_GRAD_OP through `fsdp-train` (mpirun for 2
// ranks): every step's loss and gradient norm within 1e-5 (relative), the learning rate within 1e-12.
// Its step-0 weights must still be the ones transformers started from (the export's CRC-32), or the
// fixture must be regenerated.
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import { encodeTokenFile } from '../../core/data/token-file';
import { repoRoot } from './native-build';
import { eventsOf, readRun, tempDir, train, writeConfig } from './train-runs';

const FIXTURE = path.join(repoRoot, 'test', 'fixtures', 'reference', 'parallel', 'decoder-fp32.json');
const TOLERANCE = 1e-5;

interface Step {
  step: number;
  loss: number;
  grad_norm: number;
  lr: number;
}
interface Family {
  config: Record<string, Record<string, unknown>> & { model: { vocab_size: number; architecture: string } };
  architecture: string;
  initial_weights: { safetensors_crc32: number };
  /** How far transformers' own runs of the family are apart (relative): the fixture's float32 noise floor. */
  pytorch_spread: { loss: number; grad_norm: number };
  runs: Array<{ world_size: number; sharding_strategy: string; pytorch: string; steps: Step[] }>;
}
interface DecoderParallelFixture {
  format: string;
  version: number;
  made_by: { torch: string; transformers: string; command: string };
  global_batch: number;
  tokens: { ids: number[] };
  families: Record<string, Family>;
}

const relative = (a: number, b: number) => Math.abs(a - b) / Math.abs(b);
const fixture = JSON.parse(readFileSync(FIXTURE, 'utf8')) as DecoderParallelFixture;

describe('the native decoder family against transformers under FSDP2 at 1 and 2 ranks (parallel/decoder-fp32.json)', function () {
  this.timeout(600_000);
  let dir: string;
  let tokens: string;
  before(() => {
    dir = tempDir('decoder-parallel-ref');
    tokens = path.join(dir, 'fortunes.tok');
    // Both families' vocabularies are the byte tokens' 256.
    writeFileSync(tokens, encodeTokenFile(Uint16Array.from(fixture.tokens.ids), 256, 'byte'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('was made by torch 2 and transformers for a Llama and a Qwen3, each strategy at 1 and 2 ranks', () => {
    assert.equal(fixture.format, 'fsdp-studio/decoder-parallel-reference');
    assert.match(fixture.made_by.torch, /^2\./);
    assert.ok(fixture.made_by.transformers);
    assert.deepEqual(
      Object.values(fixture.families).map((f) => `${f.config.model.architecture} ${f.architecture}`),
      ['llama LlamaForCausalLM', 'qwen3 Qwen3ForCausalLM'],
    );
    for (const f of Object.values(fixture.families)) {
      assert.equal(f.config.model.vocab_size, 256);
      assert.deepEqual(
        f.runs.map((r) => `${r.world_size} ${r.sharding_strategy} ${r.pytorch}`),
        [
          '1 FULL_SHARD fully_shard',
          '1 SHARD_GRAD_OP fully_shard_keep',
          '2 FULL_SHARD fully_shard',
          '2 SHARD_GRAD_OP fully_shard_keep',
        ],
      );
      for (const r of f.runs) assert.equal(r.steps.length, 20);
      // A step whose gradient float32 cannot fix to 1e-5 (transformers' own runs apart by more)
      // would make the tolerance meaningless: make_decoder_parallel_fixture.py tells of one.
      assert.ok(
        f.pytorch_spread.loss <= TOLERANCE / 10 && f.pytorch_spread.grad_norm <= TOLERANCE / 10,
        `transformers' own runs of ${f.config.model.architecture} are ${JSON.stringify(f.pytorch_spread)} apart`,
      );
    }
  });

  for (const [family, f] of Object.entries(fixture.families)) {
    for (const [index, expected] of f.runs.entries()) {
      it(`${family}: ${expected.sharding_strategy} on ${expected.world_size} rank(s) = ${expected.pytorch}: losses and gradient norms within ${TOLERANCE}`, async () => {
        const config = structuredClone(f.config);
        config.data = { ...config.data, train: tokens };
        config.training = { ...config.training, batch_size_per_gpu: fixture.global_batch / expected.world_size };
        config.fsdp = { sharding_strategy: expected.sharding_strategy };
        config.launch = { ...config.launch, nproc_per_node: expected.world_size };
        const name = `${family}-${expected.world_size}-${expected.sharding_strategy}`;
        const runDir = path.join(dir, name);
        const r = await train([writeConfig(dir, config, `${name}.json`), '--run-dir', runDir]);
        assert.equal(r.code, 0, r.stderr);

        if (index === 0) {
          // The weights transformers started from are still this runtime's step-0 weights.
          const hf = path.join(dir, `${family}-hf`);
          const exported = await train(['export', path.join(runDir, 'checkpoints', 'step-00000000'), '--hf', hf]);
          assert.equal(exported.code, 0, exported.stderr);
          assert.equal(
            crc32(readFileSync(path.join(hf, 'model.safetensors'))),
            f.initial_weights.safetensors_crc32,
            "the runtime's initial weights changed since the fixture was made: regenerate it" +
              ' (.venv/bin/python test/reference/make_decoder_parallel_fixture.py)',
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
  }
});
