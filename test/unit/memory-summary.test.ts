// What the estimate's words say (issue 39, item 5): the caching allocator's reserve named in the
// breakdown rather than hidden in "other", and FSDP1 or FSDP2 as the config asks.
import assert from 'node:assert/strict';
import { isConfigInputError } from '../../core/memory/inputs/config-input';
import { readConfigForEstimate } from '../../core/memory/inputs/read-config';
import { estimateMemory } from '../../core/memory/estimate';
import { allocatorReserve, summaryLine } from '../../core/memory/summary';

function accelerate(version: string) {
  const text = `# fsdp-studio: model=gpt2-124m gpu=H100\ndistributed_type: FSDP\nnum_processes: 2\nmixed_precision: bf16\nfsdp_config:\n  fsdp_sharding_strategy: FULL_SHARD\n${version}`;
  const read = readConfigForEstimate(text, '/w/fsdp.yaml', {}, 'accelerate');
  assert.ok(!isConfigInputError(read), isConfigInputError(read) ? read.error : '');
  return estimateMemory(read.input);
}

describe("the estimate's words", () => {
  it("names the caching allocator's reserve: the cached segments, block rounding and margin, out of other", () => {
    const e = accelerate('');
    const at = (id: string) => e.terms.find((t) => t.id === id)?.bytes[e.peakPhase] ?? 0;
    const reserve = at('other.allocator-cache') + at('other.block-rounding') + at('other.fragmentation');
    assert.ok(reserve > 0, 'a PyTorch run on a GPU has an allocator reserve');
    assert.equal(allocatorReserve(e), reserve);
    const gib = (b: number) => (b / 1024 ** 3).toFixed(1);
    const other = e.peak.workspace + e.peak.comm + e.peak.other - reserve;
    assert.match(summaryLine(e), new RegExp(` · allocator reserve ${gib(reserve)} · other ${gib(other)}\\)`));
  });

  it("says FSDP1 for fsdp_version 1 or none (accelerate's default), FSDP2 for fsdp_version 2", () => {
    const fsdp = (notes: string[]) => notes.filter((n) => /^FSDP[12] /.test(n)).map((n) => n.slice(0, 5));
    assert.deepEqual(fsdp(accelerate('  fsdp_version: 1\n').notes), ['FSDP1']);
    assert.deepEqual(fsdp(accelerate('').notes), ['FSDP1']);
    assert.deepEqual(fsdp(accelerate('  fsdp_version: 2\n').notes), ['FSDP2']);
    // TrainingArguments: fsdp_config's version, 1 by default (the Trainer goes through accelerate).
    const trainer = (config: string) => {
      const text = `# fsdp-studio: model=gpt2-124m gpu=H100\nper_device_train_batch_size: 2\nbf16: true\nfsdp: full_shard auto_wrap\n${config}`;
      const read = readConfigForEstimate(text, '/w/training_args.yaml', {}, 'hf-training');
      assert.ok(!isConfigInputError(read), isConfigInputError(read) ? read.error : '');
      return fsdp(estimateMemory(read.input).notes);
    };
    assert.deepEqual(trainer(''), ['FSDP1']);
    assert.deepEqual(trainer('fsdp_config:\n  version: 2\n'), ['FSDP2']);
  });
});
