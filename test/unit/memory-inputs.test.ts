// Reading configs for an estimate: our run config, DeepSpeed and accelerate configs, the
// `fsdp-studio:` comment, and errors that name the key and its line.
import assert from 'node:assert/strict';
import { findGpu, GPU_PRESETS } from '../../core/memory/gpu-presets';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  isConfigInputError,
  type ConfigInputResult,
  type ConfigMemoryInput,
} from '../../core/memory/inputs/config-input';
import { findOptionComment, parseOptionWords, setOptionInText } from '../../core/memory/inputs/estimate-options';
import { readConfigForEstimate } from '../../core/memory/inputs/read-config';

function ok(r: ConfigInputResult): ConfigMemoryInput {
  if (isConfigInputError(r)) assert.fail(r.error);
  return r;
}

describe('estimate inputs: our run config', () => {
  const sample = readFileSync(path.join(__dirname, '..', '..', 'samples', 'tiny-cpu.yaml'), 'utf8');

  it('reads the model, batch, strategy and world of samples/tiny-cpu.yaml', () => {
    const r = ok(readConfigForEstimate(sample, 'tiny-cpu.yaml'));
    assert.equal(r.kind, 'run-config');
    assert.equal(r.input.framework, 'fsdp-studio');
    assert.equal(r.input.device, 'cpu');
    assert.deepEqual(
      [r.input.model.dModel, r.input.model.nLayers, r.input.model.vocabSize, r.input.seqLen, r.input.microBatch],
      [128, 4, 256, 128, 16],
    );
    assert.equal(r.input.strategy, 'NO_SHARD');
    assert.equal(
      r.anchor.start.line,
      sample.split('\n').findIndex((l) => l.startsWith('model:')),
    );
  });

  it('takes checkpointing, precision, offload and the GPU from the file; the command line wins', () => {
    const text =
      `${sample}\nactivation_checkpointing:\n  enabled: true\n  policy: selective\nmixed_precision:\n  param_dtype: bfloat16\n`
        .replace('device: cpu', 'device: cuda\n  gpu: A100-40GB')
        .replace('sharding_strategy: NO_SHARD', 'sharding_strategy: FULL_SHARD\n  cpu_offload: true');
    const r = ok(readConfigForEstimate(text, 'run.yaml', { nproc: 8 }));
    assert.equal(r.input.checkpointing.policy, 'selective');
    assert.equal(r.input.precision.param, 'bfloat16');
    assert.deepEqual(r.input.offload, { optimizer: true, params: true });
    assert.equal(r.input.gpu?.id, 'A100-40GB');
    assert.equal(r.input.nprocPerNode, 8);
  });

  it('reports a schema error with file, line and key', () => {
    const r = readConfigForEstimate(sample.replace('batch_size_per_gpu: 16', 'batch_size_per_gpu: 0'), 'tiny.yaml');
    assert.ok(isConfigInputError(r));
    const line = sample.split('\n').findIndex((l) => l.includes('batch_size_per_gpu')) + 1;
    assert.match(r.error, new RegExp(`^tiny\\.yaml:${line}:\\d+ training\\.batch_size_per_gpu: `));
  });
});

describe('estimate inputs: DeepSpeed ds_config.json', () => {
  const ds = `{
  // fsdp-studio: model=llama-2-7b seq_len=2048 gpu=H100
  "train_batch_size": 64,
  "train_micro_batch_size_per_gpu": 4,
  "gradient_accumulation_steps": 2,
  "bf16": { "enabled": true },
  "zero_optimization": {
    "stage": 3,
    "offload_optimizer": { "device": "cpu" },
    "stage3_prefetch_bucket_size": "auto",
    "reduce_bucket_size": 2e8
  }
}`;

  it('reads stage, batch, precision, offload and buckets; the world size from train_batch_size', () => {
    const r = ok(readConfigForEstimate(ds, 'ds_config.json'));
    assert.equal(r.kind, 'deepspeed');
    const i = r.input;
    assert.deepEqual(
      [i.framework, i.strategy, i.microBatch, i.gradAccumSteps, i.nprocPerNode * i.nnodes],
      ['deepspeed', 'FULL_SHARD', 4, 2, 8],
    );
    assert.equal(i.precision.param, 'bfloat16');
    assert.deepEqual(i.offload, { optimizer: true, params: false });
    assert.equal(i.zero.reduceBucketSize, 2e8);
    assert.equal(i.zero.prefetchBucketSize, 5e7, '"auto" falls back to DeepSpeed\'s default');
    assert.ok(r.notes.some((n) => n.includes('stage3_prefetch_bucket_size is "auto"')));
    assert.equal(i.model.name, 'Llama 2 7B');
    assert.equal(i.seqLen, 2048);
    assert.equal(i.gpu?.id, 'H100-80GB');
  });

  it('derives the micro-batch from train_batch_size when it is absent', () => {
    const r = ok(
      readConfigForEstimate(
        '{"train_batch_size": 32, "gradient_accumulation_steps": 4, "zero_optimization": {"stage": 2}}',
        'ds.json',
        { nproc: 2 },
      ),
    );
    assert.equal(r.input.microBatch, 4);
  });

  it('says which key is wrong and where', () => {
    const r = readConfigForEstimate('{\n  "zero_optimization": {\n    "stage": "three"\n  }\n}', 'ds.json');
    assert.ok(isConfigInputError(r));
    assert.equal(r.error, 'ds.json:3:14 zero_optimization.stage: expected one of 0, 1, 2, 3, got "three"');
  });

  it('tells an unknown model preset apart from a custom model', () => {
    const r = readConfigForEstimate('// fsdp-studio: model=gpt5\n{"train_micro_batch_size_per_gpu": 1}', 'ds.json');
    assert.ok(isConfigInputError(r));
    assert.match(
      r.error,
      /model "gpt5" is not a preset \(gpt2-124m, .*\), a folder with a config\.json, or a model in the local Hugging Face cache$/,
    );
    const custom = ok(
      readConfigForEstimate(
        '// fsdp-studio: layers=4 d_model=256 heads=4 vocab=1000 style=llama\n{"train_micro_batch_size_per_gpu": 1}',
        'ds.json',
      ),
    );
    assert.deepEqual(
      [custom.input.model.nLayers, custom.input.model.mlp, custom.input.model.tieEmbeddings],
      [4, 'swiglu', false],
    );
  });
});

describe('estimate inputs: accelerate config', () => {
  const fsdp = `compute_environment: LOCAL_MACHINE
distributed_type: FSDP
fsdp_config:
  fsdp_sharding_strategy: 2
  fsdp_offload_params: false
  fsdp_activation_checkpointing: true
  fsdp_backward_prefetch: NO_PREFETCH
mixed_precision: bf16
num_machines: 2
num_processes: 16
`;

  it('reads FSDP strategy numbers, processes over machines, precision and checkpointing', () => {
    const r = ok(readConfigForEstimate(fsdp, 'accelerate.yaml', { microBatch: 2 }));
    const i = r.input;
    assert.equal(r.kind, 'accelerate');
    assert.deepEqual(
      [i.framework, i.strategy, i.nprocPerNode, i.nnodes, i.microBatch],
      ['pytorch', 'SHARD_GRAD_OP', 8, 2, 2],
    );
    assert.equal(i.checkpointing.policy, 'every_n');
    assert.equal(i.fsdp.backwardPrefetch, 'NONE');
    assert.equal(i.precision.activation, 'bfloat16');
  });

  it('reads the DeepSpeed plugin fields', () => {
    const r = ok(
      readConfigForEstimate(
        'distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 3\n  offload_param_device: cpu\n  offload_optimizer_device: cpu\nnum_processes: 4\n',
        'acc.yaml',
      ),
    );
    assert.deepEqual(
      [r.input.framework, r.input.strategy, r.input.offload.params, r.input.nprocPerNode],
      ['deepspeed', 'FULL_SHARD', true, 4],
    );
    assert.ok(r.notes.some((n) => n.startsWith('micro-batch 1 assumed')));
  });

  it('names a bad value and its line', () => {
    const r = readConfigForEstimate(
      fsdp.replace('fsdp_sharding_strategy: 2', 'fsdp_sharding_strategy: FULL_SHRAD'),
      'acc.yaml',
    );
    assert.ok(isConfigInputError(r));
    assert.match(r.error, /^acc\.yaml:4:27 fsdp_config\.fsdp_sharding_strategy: expected one of FULL_SHARD, /);
  });
});

describe('estimate inputs: the fsdp-studio comment and GPU names', () => {
  it('parses settings and reports unknown keys and bad values', () => {
    assert.deepEqual(parseOptionWords(['model=gpt2-355m', 'micro-batch=8', 'checkpointing=every_n:2']).options, {
      model: 'gpt2-355m',
      microBatch: 8,
      checkpointing: 'every_n',
      everyN: 2,
    });
    assert.deepEqual(
      parseOptionWords(['micro_batch=zero', 'colour=red']).problems.map((p) => p.key),
      ['micro_batch', 'colour'],
    );
    const bad = readConfigForEstimate('# fsdp-studio: nproc=-1\ndistributed_type: FSDP\n', 'acc.yaml');
    assert.ok(isConfigInputError(bad));
    assert.match(bad.error, /^acc\.yaml:1:1 fsdp-studio comment: nproc: expected an integer from 1 to 4,096, got "-1"/);
  });

  it('refuses GPU sizes and lengths no run has: gpu=0GiB, seq_len=10¹², micro-batches past 65,536', () => {
    const words = (w: string) => parseOptionWords([w]).problems.map((p) => p.message);
    assert.deepEqual(words('gpu=0GiB'), [
      'gpu: a GPU of 0GiB cannot hold a training run; give a size from 1 GiB to 16 TiB',
    ]);
    assert.deepEqual(words('gpu=100000GiB'), [
      'gpu: a GPU of 100000GiB cannot hold a training run; give a size from 1 GiB to 16 TiB',
    ]);
    assert.deepEqual(words('gpu=48GiB'), []);
    assert.deepEqual(words('seq_len=1000000000000'), [
      'seq_len: expected an integer from 1 to 10,000,000, got "1000000000000"',
    ]);
    assert.deepEqual(words('seq_len=1e12'), ['seq_len: expected an integer from 1 to 10,000,000, got "1e12"']);
    assert.deepEqual(words('micro_batch=65537'), ['micro_batch: expected an integer from 1 to 65,536, got "65537"']);
    // A run config's own launch.gpu is held to the same.
    const run = readConfigForEstimate(
      readFileSync(path.join(__dirname, '..', '..', 'samples', 'tiny-cpu.yaml'), 'utf8').replace(
        'device: cpu',
        'device: cuda\n  gpu: 0GiB',
      ),
      'run.fsdp.yaml',
    );
    assert.ok(isConfigInputError(run));
    assert.match(run.error, /launch\.gpu: a GPU of 0GiB cannot hold a training run/);
  });

  it('sets a setting in the comment, adding the comment if absent', () => {
    assert.equal(
      setOptionInText('# fsdp-studio: model=gpt2-124m gpu=L4\nx: 1\n', 'yaml', 'gpu', 'H100-80GB'),
      '# fsdp-studio: model=gpt2-124m gpu=H100-80GB\nx: 1\n',
    );
    assert.equal(setOptionInText('{"a": 1}\n', 'json', 'nproc', 4), '// fsdp-studio: nproc=4\n{"a": 1}\n');
    assert.deepEqual(findOptionComment('{\n  // fsdp-studio: seq=512\n}')?.options, { seqLen: 512 });
  });

  it('finds GPUs by loose names and custom sizes', () => {
    assert.equal(findGpu('h100')?.id, 'H100-80GB');
    assert.equal(findGpu('NVIDIA A100-SXM4-40GB')?.id, 'A100-40GB');
    assert.equal(findGpu('rtx 4090')?.id, 'RTX4090-24GB');
    assert.equal(findGpu('a100')?.id, 'A100-80GB');
    assert.equal(findGpu('48GiB')?.memoryBytes, 48 * 1024 ** 3);
    assert.equal(findGpu('custom:32GB')?.memoryBytes, 32e9);
    assert.equal(findGpu('tpu-v5'), undefined);
  });

  it('refuses a file that is none of the kinds, saying so', () => {
    const r = readConfigForEstimate('name: hello\n', 'x.yaml');
    assert.ok(isConfigInputError(r));
    assert.match(r.error, /is not a run config .* a DeepSpeed, accelerate, torchtitan or TrainingArguments config/);
  });
});

describe('GPU presets: one definition of capacity', () => {
  it("every preset is the memory CUDA reports as usable (not nvidia-smi's total, not the marketing size), with its compute capability", () => {
    const MiB = 1024 * 1024;
    // nvidia-smi's memory.total for each (what the presets used to mix with nominal sizes).
    const smi: Record<string, number> = {
      'A100-40GB': 40960,
      'A100-80GB': 81920,
      'H100-80GB': 81559,
      'H200-141GB': 143771,
      'L4-24GB': 23034,
      'RTX4090-24GB': 24564,
    };
    for (const g of GPU_PRESETS) {
      assert.ok(g.memoryBytes <= smi[g.id] * MiB, `${g.name}: ${g.memoryBytes} is above nvidia-smi's ${smi[g.id]} MiB`);
      assert.ok(g.computeCapability && g.computeCapability >= 8, `${g.name}: compute capability`);
    }
    assert.ok(findGpu('A100-80GB')!.memoryBytes < 81920 * MiB, 'the A100 80GB is not its nominal 80 GiB');
    assert.equal(findGpu('H100-80GB')!.memoryBytes, 85_017_493_504, 'as measured on the H100 (test/fixtures/measured)');
  });
});
