// The inverse questions: largest micro-batch, fewest GPUs, what each knob saves, auto checkpointing.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { checkpointCandidates, estimateMemory } from '../../core/memory/estimate';
import { findGpu, hostTarget } from '../../core/memory/gpu-presets';
import { isConfigInputError } from '../../core/memory/inputs/config-input';
import { readConfigForEstimate } from '../../core/memory/inputs/read-config';
import { fewestGpus, knobEffects, maxMicroBatch } from '../../core/memory/inverse-questions';
import { defaultMemoryInput, type MemoryInput } from '../../core/memory/memory-input';
import { findModelPreset } from '../../core/memory/model-presets';

const GiB = 1024 ** 3;
const gpt2 = findModelPreset('gpt2-124m')!;
const llama7b = findModelPreset('llama-2-7b')!;

function input(over: Partial<MemoryInput> = {}): MemoryInput {
  return { ...defaultMemoryInput(gpt2.shape, 1024), ...over };
}

const peak = (i: MemoryInput) => estimateMemory(i).peak.total;

describe('inverse questions', () => {
  it('the largest micro-batch fits and one more does not, for every framework and checkpointing', () => {
    const h100 = findGpu('H100-80GB')!;
    for (const framework of ['pytorch', 'deepspeed', 'fsdp-studio'] as const) {
      for (const checkpointing of [
        { policy: 'none', everyN: 1 },
        { policy: 'every_n', everyN: 2 },
        { policy: 'auto', everyN: 1 },
      ] as const) {
        const i = input({
          framework,
          checkpointing,
          attention: framework === 'fsdp-studio' ? 'eager' : 'flash',
          gpu: h100,
        });
        const b = maxMicroBatch(i, h100.memoryBytes);
        assert.ok(b > 1, `${framework} ${checkpointing.policy}: ${b}`);
        assert.ok(peak({ ...i, microBatch: b }) <= h100.memoryBytes);
        assert.ok(
          peak({ ...i, microBatch: b + 1 }) > h100.memoryBytes,
          `${framework} ${checkpointing.policy}: ${b + 1} fits too`,
        );
      }
    }
  });

  it('the largest micro-batch is 0 when the model alone does not fit', () => {
    const l4 = findGpu('L4')!;
    assert.equal(
      maxMicroBatch({ ...defaultMemoryInput(llama7b.shape, 4096), strategy: 'NO_SHARD' }, l4.memoryBytes),
      0,
    );
  });

  it('the fewest GPUs: that many fit, half as many do not; none for NO_SHARD', () => {
    const a100 = findGpu('A100-40GB')!;
    const big = {
      ...defaultMemoryInput(llama7b.shape, 4096),
      precision: { param: 'bfloat16', reduce: 'bfloat16', activation: 'bfloat16' },
    } as MemoryInput;
    const found = fewestGpus(big, a100.memoryBytes);
    assert.ok(found);
    const n = found.nprocPerNode * found.nnodes;
    assert.ok(n >= 2);
    assert.ok(found.estimate.peak.total <= a100.memoryBytes);
    assert.ok(peak({ ...big, nprocPerNode: n / 2 }) > a100.memoryBytes);
    assert.equal(fewestGpus({ ...big, strategy: 'NO_SHARD' }, a100.memoryBytes), undefined);
  });

  it("each knob's saving is the drop of the peak, biggest first", () => {
    const base = input({ microBatch: 8, gpu: findGpu('A100-40GB')! });
    const effects = knobEffects(base);
    const bf16 = effects.find((e) => e.change.knob === 'precision')!;
    assert.equal(
      bf16.savedBytes,
      peak(base) - peak({ ...base, precision: { param: 'bfloat16', reduce: 'bfloat16', activation: 'bfloat16' } }),
    );
    assert.ok(bf16.savedBytes > 0);
    for (let i = 1; i < effects.length; i++) assert.ok(effects[i - 1].savedBytes >= effects[i].savedBytes);
    const ckpt = effects.find((e) => e.change.knob === 'checkpointing' && e.change.value.policy === 'every_n')!;
    assert.ok(ckpt.savedBytes > 1 * GiB, 'checkpointing every block saves most activations');
  });

  it('auto checkpointing orders candidates by recomputation and picks the first that fits', () => {
    const names = checkpointCandidates(input()).map((c) => (c.policy === 'every_n' ? `every_n:${c.everyN}` : c.policy));
    assert.deepEqual(names.slice(0, 3), ['none', 'selective', 'every_n:12']);
    assert.equal(names[names.length - 1], 'every_n:1');
    const none = peak(input({ microBatch: 8 }));
    const smallest = peak(input({ microBatch: 8, checkpointing: { policy: 'every_n', everyN: 1 } }));
    const budget = (none + smallest) / 2;
    const auto = estimateMemory(
      input({ microBatch: 8, checkpointing: { policy: 'auto', everyN: 1, budgetBytes: budget } }),
    );
    assert.ok(auto.peak.total <= budget);
    assert.notEqual(auto.checkpointing.policy, 'none');
    assert.match(auto.notes[0], /^auto checkpointing chose /);
  });

  it('offers no knob that changes nothing, and no micro-batch far beyond the current one', () => {
    // samples/tiny-cpu.yaml on one rank: sharding does nothing; the largest micro-batch that fits 23 GiB is in the thousands.
    const read = readConfigForEstimate(
      readFileSync(path.join(__dirname, '..', '..', 'samples', 'tiny-cpu.yaml'), 'utf8'),
      'tiny-cpu.yaml',
    );
    assert.ok(!isConfigInputError(read));
    const effects = knobEffects({ ...read.input, gpu: hostTarget(23 * 1024 ** 3) });
    assert.ok(effects.length > 0);
    for (const k of effects)
      assert.ok(Math.abs(k.savedBytes) >= 1024 * 1024, `${k.label} changes the peak by ${k.savedBytes} bytes`);
    assert.ok(!effects.some((k) => k.change.knob === 'strategy'), 'sharding over one rank changes nothing');
    const larger = effects.filter(
      (k) => k.change.knob === 'microBatch' && (k.change.value as number) > read.input.microBatch,
    );
    assert.deepEqual(
      larger.map((k) => k.change.value),
      [64],
      'a power of two, at most four times the current 16',
    );
  });
});
