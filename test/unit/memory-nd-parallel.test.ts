import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { estimateMemory } from '../../core/memory/estimate';
import { findGpu } from '../../core/memory/gpu-presets';
import { readConfigForEstimate } from '../../core/memory/inputs/read-config';
import type { ConfigMemoryInput } from '../../core/memory/inputs/config-input';
import type { MemoryInput } from '../../core/memory/memory-input';
import { withDegrees } from '../../core/memory/parallel/degrees';
import { layerActivationBytes } from '../../core/memory/parallel/nd-activations';
import { rankMemory } from '../../core/memory/parallel/nd-memory';
import { activeParameters, layerParameters, totalParameters } from '../../core/memory/parallel/nd-model';
import { combinations, fewestGpusAnyDegrees, largestMicroBatchNd } from '../../core/memory/parallel/nd-search';
import { chunkForwardsInFlight, layersPerStage } from '../../core/memory/parallel/pipeline';
import { TORCHTITAN_FLAVOURS } from '../../core/memory/parallel/torchtitan-flavours';

const FIXTURES = path.resolve(__dirname, '../fixtures/torchtitan');
const H100 = findGpu('H100-80GB')!;

function fromFixture(file: string, comment: string): ConfigMemoryInput {
  const text = `# fsdp-studio: ${comment}\n${readFileSync(path.join(FIXTURES, file), 'utf8')}`;
  const r = readConfigForEstimate(text, path.join(FIXTURES, file));
  if ('error' in r) throw new Error(r.error);
  return r;
}

const term = (input: MemoryInput, rank: number, id: string, phase: 'forward' | 'backward' | 'optimizer' = 'forward') => {
  const t = rankMemory(input, input.parallel!, rank).terms.find((x) => x.id === id);
  return t ? (typeof t[phase] === 'number' ? (t[phase] as number) : 0) : 0;
};

describe('N-D parallel memory: models', () => {
  it('counts the parameters torchtitan\'s flavours have, as published', () => {
    const t = TORCHTITAN_FLAVOURS;
    // Meta's model cards: Llama 3.1 8B 8.03 B, 70B 70.6 B, 405B 405.9 B; DeepSeek-V3: 671 B total, 37 B active.
    assert.equal((totalParameters(t.llama3['8B']) / 1e9).toFixed(2), '8.03');
    assert.equal((totalParameters(t.llama3['70B']) / 1e9).toFixed(1), '70.6');
    assert.equal((totalParameters(t.llama3['405B']) / 1e9).toFixed(1), '405.9');
    assert.equal(Math.round(totalParameters(t.deepseek_v3['671B']) / 1e9), 671);
    assert.equal(Math.round(activeParameters(t.deepseek_v3['671B']) / 1e9), 38);
    assert.equal(t.llama3['8B'].ffnHidden, 14336, 'torchtitan\'s rounding of the SwiGLU width');
    assert.equal(t.llama3['405B'].ffnHidden, 53248);
  });

  it('splits layers over pipeline stages as torchtitan does (embedding and output weigh one layer each)', () => {
    const split = layersPerStage(126, 8);
    assert.equal(split.reduce((s, x) => s + x, 0), 126);
    assert.deepEqual(split, [15, 16, 16, 16, 16, 16, 16, 15]);
    assert.deepEqual(layersPerStage(32, 4), [8, 9, 8, 7]);
  });

  it('counts micro-batches in flight per schedule: 1F1B pp − rank, interleaved (v − 1)·pp + 2(pp − 1 − rank) + 1, GPipe all', () => {
    assert.equal(chunkForwardsInFlight('1F1B', 0, 8, 32, 1), 8);
    assert.equal(chunkForwardsInFlight('1F1B', 7, 8, 32, 1), 1);
    assert.equal(chunkForwardsInFlight('1F1B', 0, 8, 4, 1), 4, 'never more than the micro-batches');
    assert.equal(chunkForwardsInFlight('Interleaved1F1B', 0, 8, 32, 2), 8 + 14 + 1);
    assert.equal(chunkForwardsInFlight('Interleaved1F1B', 7, 8, 32, 2), 8 + 1);
    assert.equal(chunkForwardsInFlight('GPipe', 3, 8, 32, 1), 32);
  });
});

describe('N-D parallel memory: per GPU, by hand', () => {
  const base = fromFixture('llama3-llama3_8b.toml', 'nproc=8').input; // FSDP over 8, seq 8192, local batch 1, selective AC
  const m = base.parallel!.model;
  const P = totalParameters(m);

  it('FSDP2: fp32 master weights, gradients and AdamW moments are 1/8 of the model each (4 + 4 + 8 bytes)', () => {
    assert.equal(base.parallel!.shard, 8);
    assert.ok(Math.abs(term(base, 0, 'params.master') - (4 * P) / 8) / ((4 * P) / 8) < 1e-9);
    assert.ok(Math.abs(term(base, 0, 'grads.sharded', 'optimizer') - (4 * P) / 8) < 1);
    assert.ok(Math.abs(term(base, 0, 'optimizer.adamw') - (8 * P) / 8) < 1);
    const gathered = term(base, 0, 'comm.gathered');
    const layer = layerParameters(m, 0);
    const unit = layer.tpSharded + layer.replicated;
    assert.ok(Math.abs(gathered - 2 * (2 * unit + (m.vocabSize * m.dModel + m.dModel))) < 1, 'two layers gathered in bf16, and the output layer');
  });

  it('tensor parallel divides weights and optimizer by tp; sequence parallel divides the norm regions too', () => {
    const tp = withDegrees(base, { replicate: 1, shard: 4, tp: 2, cp: 1, pp: 1, ep: 1 });
    // Same 8 GPUs: 4-way FSDP × 2-way TP shards every matrix 8 ways; only norms are sharded 4 ways.
    const ratio = term(tp, 0, 'optimizer.adamw') / term(base, 0, 'optimizer.adamw');
    assert.ok(ratio > 1 && ratio < 1.001, `norms replicated across tp: ${ratio}`);
    const a = { seq: 8192, microBatch: 1, tp: 2, sequenceParallel: true, ep: 1, etp: 1, bytes: 2 };
    const withSp = layerActivationBytes(m, 0, a);
    const withoutSp = layerActivationBytes(m, 0, { ...a, sequenceParallel: false });
    const oneRank = layerActivationBytes(m, 0, { ...a, tp: 1 });
    assert.ok(withSp < withoutSp && withoutSp < oneRank, `${withSp} < ${withoutSp} < ${oneRank}`);
    // What sequence parallel saves: the two norms' inputs and statistics, divided by 2.
    const sbh = 8192 * m.dModel;
    assert.ok(Math.abs(withoutSp - withSp - (2 * (2 * sbh + 4 * 8192) - 2 * ((2 * sbh + 4 * 8192) / 2))) < 1);
  });

  it('context parallel gives each rank 1/cp of every sequence and gathers keys and values for attention', () => {
    const long = { ...base, seqLen: 32768, checkpointing: { policy: 'none' as const, everyN: 1 } };
    const cp = withDegrees(long, { replicate: 1, shard: 2, tp: 1, cp: 4, pp: 1, ep: 1 });
    const fsdp = withDegrees(long, { replicate: 1, shard: 8, tp: 1, cp: 1, pp: 1, ep: 1 });
    assert.ok(Math.abs(term(cp, 0, 'activations.saved') * 4 - term(fsdp, 0, 'activations.saved')) < 16, 'a quarter of the activations');
    assert.ok(term(cp, 0, 'comm.context-parallel') > 0);
    assert.equal(term(cp, 0, 'optimizer.adamw'), term(fsdp, 0, 'optimizer.adamw'), 'FSDP shards over shard × cp ranks: the same 8');
  });

  it('pipeline parallel: the first stage holds pp micro-batches (1F1B) and the embedding, the last one micro-batch and the logits', () => {
    const pp = withDegrees({ ...base, checkpointing: { policy: 'none', everyN: 1 } }, { replicate: 1, shard: 2, tp: 1, cp: 1, pp: 4, ep: 1, schedule: '1F1B' });
    const plan = pp.parallel!;
    const a = { seq: 8192, microBatch: 1, tp: 1, sequenceParallel: false, ep: 1, etp: 1, bytes: 2 };
    const split = layersPerStage(m.nLayers, 4);
    assert.ok(Math.abs(term(pp, 0, 'activations.saved') - 4 * split[0] * layerActivationBytes(m, 0, a)) < 1);
    assert.ok(Math.abs(term(pp, 3, 'activations.saved') - 1 * split[3] * layerActivationBytes(m, 0, a)) < 1);
    assert.equal(term(pp, 0, 'activations.logits'), 0);
    assert.ok(term(pp, 3, 'activations.logits') > 0);
    assert.equal(plan.reshardAfterForward, false, 'torchtitan keeps parameters gathered under pipeline parallel');
    const e = estimateMemory(pp);
    assert.ok(e.notes.some((n) => /pipeline ranks differ: first .* last/.test(n)), e.notes.join('\n'));
    // Interleaved: rank 0 keeps (1 + (p − 1)/(p·v)) times the layer-micro-batches of 1F1B.
    const inter = withDegrees({ ...pp, parallel: { ...plan, microbatches: 16 } }, { replicate: 1, shard: 2, tp: 1, cp: 1, pp: 4, ep: 1, schedule: 'Interleaved1F1B' });
    const oneF1B = withDegrees({ ...pp, parallel: { ...plan, microbatches: 16 } }, { replicate: 1, shard: 2, tp: 1, cp: 1, pp: 4, ep: 1, schedule: '1F1B' });
    const ratio = term(inter, 0, 'activations.saved') / term(oneF1B, 0, 'activations.saved');
    assert.ok(Math.abs(ratio - (1 + 3 / 8)) < 0.1, `interleaved / 1F1B on rank 0: ${ratio}`);
  });

  it('expert parallel spreads a DeepSeek-style MoE\'s experts over ranks', () => {
    const moe = fromFixture('deepseek_v3-deepseek_v3_16b.toml', 'nproc=8').input;
    const ep1 = withDegrees(moe, { replicate: 1, shard: 8, tp: 1, cp: 1, pp: 1, ep: 1 });
    const ep8 = withDegrees(moe, { replicate: 1, shard: 8, tp: 1, cp: 1, pp: 1, ep: 8 });
    // With FSDP over the same 8 ranks the shards are the same size; the experts are whole on their rank.
    assert.ok(Math.abs(term(ep1, 0, 'optimizer.adamw') - term(ep8, 0, 'optimizer.adamw')) / term(ep1, 0, 'optimizer.adamw') < 1e-9);
    assert.ok(term(ep8, 0, 'comm.gathered') < term(ep1, 0, 'comm.gathered'), 'a layer gathers 1/8 of the experts');
  });
});

describe('N-D parallel memory: which splits fit, and the inverse questions with every degree', () => {
  const input = fromFixture('llama3-llama3_70b.toml', 'nproc=8 nnodes=8').input;

  it('lists every way to split 64 GPUs the model allows, fitting ones first, fastest-looking first', () => {
    const all = combinations(input, 64, H100.memoryBytes);
    assert.ok(all.length >= 10);
    for (const c of all) assert.equal(c.degrees.replicate * c.degrees.shard * c.degrees.tp * c.degrees.cp * c.degrees.pp, 64);
    const firstMiss = all.findIndex((c) => !c.fits);
    assert.ok(firstMiss === -1 || all.slice(firstMiss).every((c) => !c.fits), 'no fitting one after a missing one');
    const fitting = all.filter((c) => c.fits);
    for (let i = 1; i < fitting.length; i++) assert.ok(fitting[i - 1].speed >= fitting[i].speed);
    for (const c of fitting) assert.ok(c.estimate.peak.total <= H100.memoryBytes);
  });

  it('answers the fewest GPUs over all degrees, and the largest micro-batch with the config\'s degrees', () => {
    const few = fewestGpusAnyDegrees(input, H100.memoryBytes)!;
    assert.ok(few.best.fits);
    assert.ok(!combinations(input, few.gpus / 2, H100.memoryBytes).some((c) => c.fits), `nothing fits on ${few.gpus / 2}`);
    const b = largestMicroBatchNd(input, H100.memoryBytes);
    assert.ok(b >= 1);
    assert.ok(estimateMemory({ ...input, microBatch: b }).peak.total <= H100.memoryBytes);
    assert.ok(estimateMemory({ ...input, microBatch: b + 1 }).peak.total > H100.memoryBytes);
  });
});
