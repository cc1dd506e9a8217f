import assert from 'node:assert/strict';
import { analyseConfig } from '../../core/config/config-analysis';
import { NEW_CONFIG_MODELS, NEW_CONFIG_TARGETS, newRunConfigText } from '../../core/config/new-run-config';
import { estimateMemory } from '../../core/memory/estimate';
import { findGpu } from '../../core/memory/gpu-presets';
import { readConfigForEstimate } from '../../core/memory/inputs/read-config';
import { isConfigInputError } from '../../core/memory/inputs/config-input';
import { configMemory } from '../../core/memory/config-memory';

const HOST = 23.5 * 1024 ** 3; // this kind of machine: 2 cores, 23.5 GiB

describe('New run config', () => {
  it('writes, for every model size, target and rank count, a config the checks find nothing wrong with', () => {
    for (const model of NEW_CONFIG_MODELS) {
      for (const target of NEW_CONFIG_TARGETS) {
        for (const ranks of [1, 4]) {
          const text = newRunConfigText({ model: model.id, target, ranks, hostMemoryBytes: HOST });
          const { problems } = analyseConfig('run-config', text, `/w/${model.id}.fsdp.yaml`);
          assert.deepEqual(
            problems.map((p) => `${p.code}: ${p.message}`),
            [],
            `${model.id} on ${ranks} × ${target}`,
          );
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
    assert.match(
      text.split('\n')[1],
      /^# estimated peak [\d.]+ GiB per GPU of 22\.5 GiB \(largest micro-batch that fits: \d+\)$/,
    );
  });

  it('says when a model cannot fit the GPU at all, and still writes a config to start from', () => {
    const text = newRunConfigText({ model: 'gpt2-1.5b', target: 'L4-24GB', ranks: 1 });
    assert.match(
      text.split('\n')[1],
      /does not fit L4 24GB even with one sequence per GPU and activation checkpointing/,
    );
    assert.match(text, /activation_checkpointing:\n {2}enabled: true/);
  });

  it('refuses a model or target it does not know, naming the known ones', () => {
    assert.throws(
      () => newRunConfigText({ model: 'llama-2-7b', target: 'cpu', ranks: 1, hostMemoryBytes: HOST }),
      /unknown model "llama-2-7b"; known: tiny, gpt2-124m/,
    );
    assert.throws(
      () => newRunConfigText({ model: 'tiny', target: 'TPU', ranks: 1 }),
      /unknown target "TPU"; known: cpu, A100-40GB/,
    );
  });

  it("on a CPU, sizes the batch so every rank fits its share of this machine's memory (GPT-2 124M on 2 ranks used to need 23.7 GiB of 11.8)", () => {
    for (const model of ['gpt2-124m', 'gpt2-355m']) {
      for (const ranks of [1, 2, 4]) {
        const text = newRunConfigText({ model, target: 'cpu', ranks, hostMemoryBytes: HOST });
        const m = configMemory('run-config', text, `${model}.fsdp.yaml`, { hostMemoryBytes: HOST });
        assert.ok(!('error' in m), 'error' in m ? m.error : '');
        assert.equal(m.problem, undefined, `${model} on ${ranks} CPU ranks: ${m.title}`);
        assert.ok(
          m.estimate.peak.total <= (0.9 * HOST) / ranks,
          `${model} × ${ranks} keeps a tenth of the machine free`,
        );
        assert.match(
          text.split('\n')[1],
          /^# estimated peak [\d.]+ GiB per rank of [\d.]+ GiB, 90% of this machine's memory \/ \d ranks? \(largest micro-batch that fits: \d+\)$/,
        );
      }
    }
  });
});
