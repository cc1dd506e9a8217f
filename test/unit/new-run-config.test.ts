import assert from 'node:assert/strict';
import { analyseConfig } from '../../core/config/config-analysis';
import { NEW_CONFIG_MODELS, NEW_CONFIG_TARGETS, newRunConfigText } from '../../core/config/new-run-config';
import { estimateMemory } from '../../core/memory/estimate';
import { findGpu } from '../../core/memory/gpu-presets';
import { readConfigForEstimate } from '../../core/memory/inputs/read-config';
import { isConfigInputError } from '../../core/memory/inputs/config-input';

describe('New run config', () => {
  it('writes, for every model size, target and rank count, a config the checks find nothing wrong with', () => {
    for (const model of NEW_CONFIG_MODELS) {
      for (const target of NEW_CONFIG_TARGETS) {
        for (const ranks of [1, 4]) {
          const text = newRunConfigText({ model: model.id, target, ranks });
          const { problems } = analyseConfig('run-config', text, `/w/${model.id}.fsdp.yaml`);
          assert.deepEqual(problems.map((p) => `${p.code}: ${p.message}`), [], `${model.id} on ${ranks} × ${target}`);
        }
      }
    }
  });

  it('picks the least sharding and a micro-batch whose estimate fits the GPU, and says so', () => {
    const text = newRunConfigText({ model: 'gpt2-355m', target: 'L4-24GB', ranks: 4 });
    const r = readConfigForEstimate(text, 'x.fsdp.yaml');
    assert.ok(!isConfigInputError(r));
    const estimate = estimateMemory(r.input);
    assert.ok(estimate.peak.total <= findGpu('L4-24GB')!.memoryBytes, 'the chosen plan fits');
    assert.match(text, /sharding_strategy: NO_SHARD/);
    assert.match(text.split('\n')[1], /^# estimated peak [\d.]+ GiB per GPU of 22\.5 GiB \(largest micro-batch that fits: \d+\)$/);
  });

  it('says when a model cannot fit the GPU at all, and still writes a config to start from', () => {
    const text = newRunConfigText({ model: 'gpt2-1.5b', target: 'L4-24GB', ranks: 1 });
    assert.match(text.split('\n')[1], /does not fit L4 24GB even with one sequence per GPU and activation checkpointing/);
    assert.match(text, /activation_checkpointing:\n {2}enabled: true/);
  });

  it('refuses a model or target it does not know, naming the known ones', () => {
    assert.throws(() => newRunConfigText({ model: 'llama-2-7b', target: 'cpu', ranks: 1 }), /unknown model "llama-2-7b"; known: tiny, gpt2-124m/);
    assert.throws(() => newRunConfigText({ model: 'tiny', target: 'TPU', ranks: 1 }), /unknown target "TPU"; known: cpu, A100-40GB/);
  });
});
