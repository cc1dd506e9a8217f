// torchtitan 0.3's Python configurations: which functions the text shows (core/config/torchtitan-python.ts)
// and how the probe's JSON of a Trainer.Config becomes the N-D estimator's input
// (core/memory/inputs/from-torchtitan-python.ts). The probe itself runs in test/runs/torchtitan-python-probe.test.ts.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { torchtitanConfigFunctions } from '../../core/config/torchtitan-python';
import { configMemory } from '../../core/memory/config-memory';
import { estimateMemory } from '../../core/memory/estimate';
import {
  torchtitanPythonInput,
  torchtitanPythonLens,
  torchtitanPythonOptions,
  type ProbedTrainerConfig,
} from '../../core/memory/inputs/from-torchtitan-python';

const repoRoot = path.resolve(__dirname, '../..');
const FIXTURE = path.join(repoRoot, 'test', 'fixtures', 'torchtitan', 'python', 'my_configs.py');

/** Llama 3 8B as torchtitan 0.3's llama3_8b() returns it (its model config's widths), degrees as given. */
function llama3_8b(over: Partial<ProbedTrainerConfig['parallelism']> = {}): ProbedTrainerConfig {
  return {
    model: {
      name: 'llama3',
      flavor: '8B',
      shape: {
        dim: 4096,
        vocab_size: 128256,
        n_layers: 32,
        n_heads: 32,
        n_kv_heads: 8,
        head_dim: 128,
        ffn_hidden: 14336,
        qk_norm: false,
        moe: false,
        tied: false,
      },
    },
    parallelism: {
      dp_replicate: 1,
      dp_shard: 8,
      tp: 1,
      cp: 1,
      pp: 1,
      ep: 1,
      sequence_parallel: true,
      pp_schedule: 'Interleaved1F1B',
      pp_microbatch_size: 1,
      pp_layers_per_stage: null,
      fsdp_reshard_after_forward: 'default',
      ...over,
    },
    training: {
      local_batch_size: 2,
      global_batch_size: -1,
      seq_len: 4096,
      dtype: 'float32',
      mixed_precision_param: 'bfloat16',
      mixed_precision_reduce: 'float32',
      enable_cpu_offload: false,
    },
    activation_checkpoint: 'full',
    compile: { enable: false, components: ['model', 'loss'] },
    float8: false,
    nvfp4: false,
  };
}

describe('torchtitan 0.3 Python configurations', () => {
  it("finds the functions annotated -> Trainer.Config in a person's module, and only those", () => {
    const text = readFileSync(FIXTURE, 'utf8');
    assert.deepEqual(torchtitanConfigFunctions(text), [
      { name: 'llama3_8b_fsdp8', line: text.split('\n').findIndex((l) => l.startsWith('def llama3_8b_fsdp8')) },
      { name: 'llama3_8b_typo', line: text.split('\n').findIndex((l) => l.startsWith('def llama3_8b_typo')) },
    ]);
    const multiLine =
      'from torchtitan.trainer import Trainer\n\ndef f(\n    x: int = 1,\n) -> "Trainer.Config":\n    ...\n';
    assert.deepEqual(torchtitanConfigFunctions(multiLine), [{ name: 'f', line: 2 }]);
  });

  it('shows nothing for Python that does not import torchtitan, or whose functions return something else', () => {
    assert.deepEqual(torchtitanConfigFunctions('class Trainer: ...\ndef f() -> Trainer.Config:\n    ...\n'), []);
    assert.deepEqual(torchtitanConfigFunctions('import torchtitan\ndef f() -> dict:\n    ...\n'), []);
  });

  it('maps the stated degrees, batch, sequence, dtypes and checkpointing onto the N-D plan', () => {
    const read = torchtitanPythonInput(llama3_8b({ dp_replicate: 2, dp_shard: 4, tp: 2 }), { gpu: 'H100-80GB' });
    assert.ok(!('error' in read), JSON.stringify(read));
    const { input } = read;
    const plan = input.parallel!;
    assert.deepEqual(
      [plan.replicate, plan.shard, plan.tp, plan.cp, plan.pp, plan.ep, plan.sequenceParallel],
      [2, 4, 2, 1, 1, 1, true],
    );
    assert.equal(plan.model.dModel, 4096);
    assert.equal(plan.model.nKvHeads, 8);
    assert.equal(plan.model.ffnHidden, 14336);
    assert.equal(input.microBatch, 2);
    assert.equal(input.seqLen, 4096);
    assert.equal(input.strategy, 'HYBRID_SHARD');
    assert.deepEqual(input.checkpointing, { policy: 'every_n', everyN: 1 });
    assert.deepEqual(input.precision, { param: 'bfloat16', reduce: 'float32', activation: 'bfloat16' });
    assert.equal(input.gpu?.name, 'H100 80GB');
    assert.match(read.model, /^torchtitan llama3 8B \(8\.03 B parameters/);
  });

  it('gives the same figure as the 0.2.x TOML stating the same values', () => {
    const toml = [
      '# fsdp-studio: gpu=H100-80GB',
      '[model]',
      'name = "llama3"',
      'flavor = "8B"',
      '[training]',
      'local_batch_size = 2',
      'seq_len = 4096',
      '[parallelism]',
      'data_parallel_shard_degree = 8',
      '[activation_checkpoint]',
      'mode = "full"',
      '',
    ].join('\n');
    const fromToml = configMemory('torchtitan', toml, 'job.toml');
    assert.ok(!('error' in fromToml));
    const read = torchtitanPythonInput(llama3_8b(), { gpu: 'H100-80GB' });
    assert.ok(!('error' in read));
    assert.equal(estimateMemory(read.input).peak.total, fromToml.estimate.peak.total);
    // The TOML's own hint says which release its files are.
    assert.match(fromToml.title, / — Llama 3 8B \(torchtitan 0\.2\.2 TOML\)$/);
  });

  it('takes data_parallel_shard_degree -1 as 1 and says so; names float8 and compile as not modelled', () => {
    const c = { ...llama3_8b({ dp_shard: -1 }), float8: true, compile: { enable: true, components: ['model'] } };
    const read = torchtitanPythonInput(c);
    assert.ok(!('error' in read));
    assert.equal(read.input.parallel!.shard, 1);
    assert.match(read.notes.join('\n'), /data_parallel_shard_degree -1 .* taken as 1/);
    assert.deepEqual(
      read.input.notModelled?.map((n) => n.what),
      ['float8 matmuls', 'torch.compile'],
    );
  });

  it("takes the world size for data_parallel_shard_degree -1 from the file's fsdp-studio comment, its GPU over the panel's", () => {
    const text = '# fsdp-studio: nproc=8 nnodes=8 gpu=A100-80GB\nfrom torchtitan.trainer import Trainer\n';
    const options = torchtitanPythonOptions(text, 'H100-80GB');
    assert.deepEqual(options, { gpu: 'A100-80GB', nproc: 8, nnodes: 8 });
    assert.deepEqual(torchtitanPythonOptions('import torchtitan\n', 'H100-80GB'), { gpu: 'H100-80GB' });
    const read = torchtitanPythonInput(llama3_8b({ dp_shard: -1, tp: 8 }), options);
    assert.ok(!('error' in read));
    assert.deepEqual([read.input.parallel!.shard, read.input.nprocPerNode, read.input.nnodes], [8, 8, 8]);
    assert.equal(read.input.gpu?.name, 'A100 80GB');
    assert.deepEqual(read.notes, []);
    const uneven = torchtitanPythonInput(llama3_8b({ dp_shard: -1, tp: 8 }), { nproc: 12 });
    assert.ok(!('error' in uneven));
    assert.equal(uneven.input.parallel!.shard, 1);
    assert.match(uneven.notes.join('\n'), /the degrees \(8\) do not divide the world size 12/);
  });

  it('puts the figure on the lens, and a function that raised or a bad degree on the lens as why', () => {
    const ok = torchtitanPythonLens({ function: 'f', line: 3, config: llama3_8b() }, { gpu: 'H100-80GB' });
    assert.match(ok.title, /^≈ [\d.]+ GiB \/ GPU .*— fits H100 80GB — torchtitan llama3 8B$/);
    assert.match(ok.detail, /^f\(\): ≈ .* torchtitan 0\.3 config/);
    const error = 'ValueError: bad (at /home/me/w/x.py:10)';
    const raised = torchtitanPythonLens({ function: 'g', line: 9, error });
    assert.equal(raised.title, 'no estimate: ValueError: bad (at x.py:10)');
    assert.equal(raised.detail, `g(): ${error}`);
    const zero = torchtitanPythonLens({ function: 'h', line: 1, config: llama3_8b({ tp: 0 }) });
    assert.match(zero.title, /^no estimate: parallelism\.tensor_parallel_degree is 0/);
  });

  it('reads a MoE model by torchtitan 0.2.2 flavour when it knows it, else says why', () => {
    const moe = llama3_8b();
    moe.model = { name: 'deepseek_v3', flavor: '16B', shape: { ...moe.model.shape!, moe: true } };
    const known = torchtitanPythonInput(moe);
    assert.ok(!('error' in known), JSON.stringify(known));
    assert.ok(known.input.parallel!.model.moe, 'the flavour table gives the experts');
    assert.match(known.notes.join('\n'), /as torchtitan 0\.2\.2 defined it/);
    moe.model = { ...moe.model, flavor: 'tiny-unknown' };
    const unknown = torchtitanPythonInput(moe);
    assert.ok('error' in unknown);
    assert.match(unknown.error, /deepseek_v3 flavour tiny-unknown: a MoE model/);
  });
});
