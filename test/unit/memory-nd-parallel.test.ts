import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { estimateMemory } from '../../core/memory/estimate';
import { findGpu } from '../../core/memory/gpu-presets';
import { shapeOfNdModel } from '../../core/memory/inputs/from-torchtitan';
import { readConfigForEstimate } from '../../core/memory/inputs/read-config';
import type { ConfigMemoryInput } from '../../core/memory/inputs/config-input';
import { defaultMemoryInput, type MemoryInput } from '../../core/memory/memory-input';
import { withDegrees } from '../../core/memory/parallel/degrees';
import { layerActivationBytes } from '../../core/memory/parallel/nd-activations';
import { rankMemory } from '../../core/memory/parallel/nd-memory';
import { activeParameters, layerParameters, totalParameters, type NdModel } from '../../core/memory/parallel/nd-model';
import type { ParallelPlan } from '../../core/memory/parallel/parallel-plan';
import { combinations, fewestGpusAnyDegrees, largestMicroBatchNd } from '../../core/memory/parallel/nd-search';
import { chunkForwardsInFlight, layersPerStage, type PipelineSchedule } from '../../core/memory/parallel/pipeline';
import { TORCHTITAN_FLAVOURS } from '../../core/memory/parallel/torchtitan-flavours';

const FIXTURES = path.resolve(__dirname, '../fixtures/torchtitan');
const H100 = findGpu('H100-80GB')!;

function fromFixture(file: string, comment: string): ConfigMemoryInput {
  const text = `# fsdp-studio: ${comment}\n${readFileSync(path.join(FIXTURES, file), 'utf8')}`;
  const r = readConfigForEstimate(text, path.join(FIXTURES, file));
  if ('error' in r) throw new Error(r.error);
  return r;
}

const term = (
  input: MemoryInput,
  rank: number,
  id: string,
  phase: 'forward' | 'backward' | 'optimizer' = 'forward',
) => {
  const t = rankMemory(input, input.parallel!, rank).terms.find((x) => x.id === id);
  return t ? (typeof t[phase] === 'number' ? (t[phase] as number) : 0) : 0;
};

describe('N-D parallel memory: models', () => {
  it("counts the parameters torchtitan's flavours have, as published", () => {
    const t = TORCHTITAN_FLAVOURS;
    // Meta's model cards: Llama 3.1 8B 8.03 B, 70B 70.6 B, 405B 405.9 B; DeepSeek-V3: 671 B total, 37 B active.
    assert.equal((totalParameters(t.llama3['8B']) / 1e9).toFixed(2), '8.03');
    assert.equal((totalParameters(t.llama3['70B']) / 1e9).toFixed(1), '70.6');
    assert.equal((totalParameters(t.llama3['405B']) / 1e9).toFixed(1), '405.9');
    assert.equal(Math.round(totalParameters(t.deepseek_v3['671B']) / 1e9), 671);
    assert.equal(Math.round(activeParameters(t.deepseek_v3['671B']) / 1e9), 38);
    assert.equal(t.llama3['8B'].ffnHidden, 14336, "torchtitan's rounding of the SwiGLU width");
    assert.equal(t.llama3['405B'].ffnHidden, 53248);
  });

  it('splits layers over pipeline stages as torchtitan does (embedding and output weigh one layer each)', () => {
    const split = layersPerStage(126, 8);
    assert.equal(
      split.reduce((s, x) => s + x, 0),
      126,
    );
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
    assert.ok(
      Math.abs(gathered - 2 * (2 * unit + (m.vocabSize * m.dModel + m.dModel))) < 1,
      'two layers gathered in bf16, and the output layer',
    );
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
    assert.ok(
      Math.abs(term(cp, 0, 'activations.saved') * 4 - term(fsdp, 0, 'activations.saved')) < 16,
      'a quarter of the activations',
    );
    assert.ok(term(cp, 0, 'comm.context-parallel') > 0);
    assert.equal(
      term(cp, 0, 'optimizer.adamw'),
      term(fsdp, 0, 'optimizer.adamw'),
      'FSDP shards over shard × cp ranks: the same 8',
    );
  });

  it('pipeline parallel: the first stage holds pp micro-batches (1F1B) and the embedding, the last one micro-batch and the logits', () => {
    const pp = withDegrees(
      { ...base, checkpointing: { policy: 'none', everyN: 1 } },
      { replicate: 1, shard: 2, tp: 1, cp: 1, pp: 4, ep: 1, schedule: '1F1B' },
    );
    const plan = pp.parallel!;
    const a = { seq: 8192, microBatch: 1, tp: 1, sequenceParallel: false, ep: 1, etp: 1, bytes: 2 };
    const split = layersPerStage(m.nLayers, 4);
    assert.ok(Math.abs(term(pp, 0, 'activations.saved') - 4 * split[0] * layerActivationBytes(m, 0, a)) < 1);
    assert.ok(Math.abs(term(pp, 3, 'activations.saved') - 1 * split[3] * layerActivationBytes(m, 0, a)) < 1);
    assert.equal(term(pp, 0, 'activations.logits'), 0);
    assert.ok(term(pp, 3, 'activations.logits') > 0);
    assert.equal(plan.reshardAfterForward, false, 'torchtitan keeps parameters gathered under pipeline parallel');
    const e = estimateMemory(pp);
    assert.ok(
      e.notes.some((n) => /pipeline ranks differ: first .* last/.test(n)),
      e.notes.join('\n'),
    );
    assert.ok(
      e.notes.some((n) => /pipeline parallel: .* a lower bound/.test(n)),
      'says the pipeline estimate is a lower bound (bench/results/memory-nd-2026-11-26.md)',
    );
    // Interleaved: rank 0 keeps (1 + (p − 1)/(p·v)) times the layer-micro-batches of 1F1B.
    const inter = withDegrees(
      { ...pp, parallel: { ...plan, microbatches: 16 } },
      { replicate: 1, shard: 2, tp: 1, cp: 1, pp: 4, ep: 1, schedule: 'Interleaved1F1B' },
    );
    const oneF1B = withDegrees(
      { ...pp, parallel: { ...plan, microbatches: 16 } },
      { replicate: 1, shard: 2, tp: 1, cp: 1, pp: 4, ep: 1, schedule: '1F1B' },
    );
    const ratio = term(inter, 0, 'activations.saved') / term(oneF1B, 0, 'activations.saved');
    assert.ok(Math.abs(ratio - (1 + 3 / 8)) < 0.1, `interleaved / 1F1B on rank 0: ${ratio}`);
  });

  it("expert parallel spreads a DeepSeek-style MoE's experts over ranks", () => {
    const moe = fromFixture('deepseek_v3-deepseek_v3_16b.toml', 'nproc=8').input;
    const ep1 = withDegrees(moe, { replicate: 1, shard: 8, tp: 1, cp: 1, pp: 1, ep: 1 });
    const ep8 = withDegrees(moe, { replicate: 1, shard: 8, tp: 1, cp: 1, pp: 1, ep: 8 });
    // With FSDP over the same 8 ranks the shards are the same size; the experts are whole on their rank.
    assert.ok(
      Math.abs(term(ep1, 0, 'optimizer.adamw') - term(ep8, 0, 'optimizer.adamw')) / term(ep1, 0, 'optimizer.adamw') <
        1e-9,
    );
    assert.ok(term(ep8, 0, 'comm.gathered') < term(ep1, 0, 'comm.gathered'), 'a layer gathers 1/8 of the experts');
  });
});

describe('N-D parallel memory: which splits fit, and the inverse questions with every degree', () => {
  const input = fromFixture('llama3-llama3_70b.toml', 'nproc=8 nnodes=8').input;

  it('lists every way to split 64 GPUs the model allows, fitting ones first, fastest-looking first', () => {
    const all = combinations(input, 64, H100.memoryBytes);
    assert.ok(all.length >= 10);
    for (const c of all)
      assert.equal(c.degrees.replicate * c.degrees.shard * c.degrees.tp * c.degrees.cp * c.degrees.pp, 64);
    const firstMiss = all.findIndex((c) => !c.fits);
    assert.ok(firstMiss === -1 || all.slice(firstMiss).every((c) => !c.fits), 'no fitting one after a missing one');
    const fitting = all.filter((c) => c.fits);
    for (let i = 1; i < fitting.length; i++) assert.ok(fitting[i - 1].speed >= fitting[i].speed);
    for (const c of fitting) assert.ok(c.estimate.peak.total <= H100.memoryBytes);
  });

  it("answers the fewest GPUs over all degrees, and the largest micro-batch with the config's degrees", () => {
    const few = fewestGpusAnyDegrees(input, H100.memoryBytes)!;
    assert.ok(few.best.fits);
    assert.ok(
      !combinations(input, few.gpus / 2, H100.memoryBytes).some((c) => c.fits),
      `nothing fits on ${few.gpus / 2}`,
    );
    const b = largestMicroBatchNd(input, H100.memoryBytes);
    assert.ok(b >= 1);
    assert.ok(estimateMemory({ ...input, microBatch: b }).peak.total <= H100.memoryBytes);
    assert.ok(estimateMemory({ ...input, microBatch: b + 1 }).peak.total > H100.memoryBytes);
  });
});

// A model small enough to count by hand: vocabulary 1000, width h = 64, 4 layers, 4 query heads and
// 2 key/value heads of 16 (q width 64, k/v width 32), SwiGLU 128 wide, untied output.
//   attention: h·q + 2·h·kv + q·h = 4096 + 4096 + 4096 = 12,288; SwiGLU: 3·64·128 = 24,576
//   a layer: 36,864 matrix elements (tensor parallel shards them) + 128 norm weights = 36,992
//   embedding 1000·64 = 64,000; final norm + output 64 + 64,000 = 64,064
//   total 4·36,992 + 64,000 + 64,064 = 276,032
// bf16 compute (2 bytes), fp32 master weights, micro-batch 1 of s = 256 tokens, no checkpointing,
// on the CPU (no CUDA context or NCCL terms), so every byte below is the formula's.
describe('N-D parallel memory: a small model by hand, per GPU, for TP / CP / PP × FSDP', () => {
  const TINY: NdModel = {
    name: 'tiny',
    vocabSize: 1000,
    dModel: 64,
    nLayers: 4,
    nHeads: 4,
    nKvHeads: 2,
    headDim: 16,
    ffnHidden: 128,
    mlp: 'swiglu',
    tieEmbeddings: false,
  };
  const split = (d: {
    shard: number;
    tp?: number;
    sp?: boolean;
    cp?: number;
    pp?: number;
    schedule?: PipelineSchedule;
    microbatches?: number;
  }): MemoryInput => {
    const pp = d.pp ?? 1;
    const schedule = d.schedule ?? '1F1B';
    const tp = d.tp ?? 1;
    const plan: ParallelPlan = {
      model: TINY,
      replicate: 1,
      shard: d.shard,
      tp,
      cp: d.cp ?? 1,
      pp,
      ep: 1,
      etp: 1,
      sequenceParallel: d.sp ?? tp > 1,
      schedule,
      stagesPerRank: schedule === 'Interleaved1F1B' ? 2 : 1,
      microbatches: d.microbatches ?? 1,
      reshardAfterForward: pp === 1,
      masterDtype: 'float32',
    };
    return {
      ...defaultMemoryInput(shapeOfNdModel(TINY), 256),
      framework: 'torchtitan',
      device: 'cpu',
      nprocPerNode: d.shard * tp * (d.cp ?? 1) * pp,
      precision: { param: 'bfloat16', reduce: 'float32', activation: 'bfloat16' },
      parallel: plan,
    };
  };
  /** A term's bytes on pipeline rank `rank`: forward, optimizer, or backward step 0 / 1. */
  const bytes = (input: MemoryInput, rank: number, id: string, phase: 'forward' | 'optimizer' | 0 | 1 = 'forward') => {
    const t = rankMemory(input, input.parallel!, rank).terms.find((x) => x.id === id);
    if (!t) return 0;
    if (phase === 'forward' || phase === 'optimizer') return t[phase];
    return typeof t.backward === 'number' ? t.backward : t.backward(phase);
  };

  it("counts the small model's parameters as the comment does", () => {
    assert.equal(totalParameters(TINY), 276_032);
    assert.deepEqual(layerParameters(TINY, 0), { tpSharded: 36_864, replicated: 128, experts: 0 });
  });

  it('FSDP 8: every rank holds 1/8 of the weights, gradients and AdamW state; two layers and the output gathered', () => {
    const i = split({ shard: 8 });
    // 276,032 / 8 = 34,504 elements: fp32 master 138,016 bytes, fp32 gradients 138,016, AdamW 2 × 138,016.
    assert.equal(bytes(i, 0, 'params.master'), 138_016);
    assert.equal(bytes(i, 0, 'grads.sharded', 'optimizer'), 138_016);
    assert.equal(bytes(i, 0, 'optimizer.adamw'), 276_032);
    // bf16: (2 · 36,992 + 64,064) · 2 = 276,096 (the output layer stays gathered).
    assert.equal(bytes(i, 0, 'comm.gathered'), 276_096);
    // A layer saves, per token (sb = 256): norms 2·(2·64 + 4) + 2·2·64 = 520 (inputs, fp32 rstd, gathered
    // outputs), rotary q and k in fp32 4·(64 + 32) = 384, SDPA q/k/v 2·(64 + 32 + 32) = 256 + output and
    // its contiguous copy 2·2·64 = 256 + fp32 logsumexp 4·4 = 16, SwiGLU 4·2·128 = 1024: 2,456 bytes,
    // × 256 tokens = 628,736 bytes a layer, × 4 layers = 2,514,944.
    assert.equal(bytes(i, 0, 'activations.saved'), 2_514_944);
    // Logits 256 · 1000 in bf16, their fp32 copy and log_softmax's fp32 output: 256,000 · (2 + 4 + 4).
    assert.equal(bytes(i, 0, 'activations.logits'), 2_560_000);
    assert.equal(
      bytes(i, 0, 'activations.loss-grad', 0),
      1_024_000,
      'fp32 gradient of the logits at the start of backward',
    );
    // The peak is the start of backward: 138,016 + 276,032 + 276,096 + 2,514,944 + 2,560,000 + 1,024,000
    // + 4,096 (int64 ids and targets, 16 · 256) = 6,793,184.
    assert.equal(rankMemory(i, i.parallel!, 0).peak, 6_793_184);
  });

  it('TP 2 (+SP) × FSDP 4: matrices sharded 8 ways, norms 4 ways, activations halved but for the gathered norm outputs', () => {
    const i = split({ shard: 4, tp: 2 });
    // Per layer 36,864 / 2 / 4 + 128 / 4 = 4,640; × 4 = 18,560; embedding and output (64,000 + 64,064) / 2 / 4 = 16,008.
    // 34,568 elements: fp32 138,272 bytes, AdamW 276,544.
    assert.equal(bytes(i, 0, 'params.master'), 138_272);
    assert.equal(bytes(i, 0, 'optimizer.adamw'), 276_544);
    // Gathered bf16: a unit is 36,864 / 2 + 128 = 18,560; (2 · 18,560 + 64,064 / 2) · 2 = 138,304.
    assert.equal(bytes(i, 0, 'comm.gathered'), 138_304);
    // Per token: norms 2·(2·64/2 + 4/2) + 2·2·64 = 388, rotary 384/2 = 192, SDPA (256 + 256 + 16)/2 = 264,
    // SwiGLU 1024/2 = 512: 1,356 · 256 = 347,136 a layer, × 4 = 1,388,544.
    assert.equal(bytes(i, 0, 'activations.saved'), 1_388_544);
    // Without sequence parallel the norms' inputs and statistics are whole: 520 + 192 + 264 + 512 = 1,488 · 256 · 4 = 1,523,712.
    assert.equal(bytes(split({ shard: 4, tp: 2, sp: false }), 0, 'activations.saved'), 1_523_712);
    // Loss parallel: the vocabulary sharded over 2, 128,000 · 10 = 1,280,000.
    assert.equal(bytes(i, 0, 'activations.logits'), 1_280_000);
  });

  it('CP 2 × FSDP 4: FSDP shards over the 8 shard × cp ranks, each holds 128 of the 256 tokens, keys and values gathered', () => {
    const i = split({ shard: 4, cp: 2 });
    assert.equal(bytes(i, 0, 'params.master'), 138_016, 'as FSDP 8');
    // 2,456 bytes a token × 128 tokens × 4 layers = 1,257,472.
    assert.equal(bytes(i, 0, 'activations.saved'), 1_257_472);
    // One layer's keys and values over the whole sequence: 2 bytes · 256 · (32 + 32) = 32,768.
    assert.equal(bytes(i, 0, 'comm.context-parallel'), 32_768);
    assert.equal(bytes(i, 0, 'activations.logits'), 1_280_000, '128 tokens of logits');
  });

  it('PP 2 (1F1B, 4 micro-batches) × FSDP 4: the first rank holds the embedding and 2 micro-batches, the last the output and 1', () => {
    const i = split({ shard: 4, pp: 2, microbatches: 4 });
    // 4 layers + embedding + output = 6 "layers" over 2 stages: 3 each, less the embedding / output: 2 and 2.
    assert.deepEqual(layersPerStage(4, 2), [2, 2]);
    // Rank 0: (2 · 36,992 + 64,000) / 4 = 34,496 elements, 137,984 bytes fp32; rank 1: (73,984 + 64,064) / 4 = 34,512, 138,048.
    assert.equal(bytes(i, 0, 'params.master'), 137_984);
    assert.equal(bytes(i, 1, 'params.master'), 138_048);
    // reshard_after_forward off under pipeline parallel: the stage's units stay gathered in bf16:
    // rank 0 (2 · 36,992 + 64,000 embedding) · 2 = 275,968; rank 1 (73,984 + 64,064 output) · 2 = 276,096.
    assert.equal(bytes(i, 0, 'comm.gathered'), 275_968);
    assert.equal(bytes(i, 1, 'comm.gathered'), 276_096);
    // Gradient sync off until the last micro-batch: the stage's unsharded gradients accumulate in fp32
    // through backward: rank 0 (73,984 + 64,000) · 4 = 551,936; rank 1 (73,984 + 64,064) · 4 = 552,192.
    assert.equal(bytes(i, 0, 'grads.unsharded-accumulated', 0), 551_936);
    assert.equal(bytes(i, 1, 'grads.unsharded-accumulated', 1), 552_192);
    // 1F1B with 4 micro-batches runs rank 0's third forward after its first backward: the accumulated
    // gradients are there with the 2 micro-batches in flight (measured, bench/results/memory-nd-pp-2026-11-26.md).
    assert.equal(bytes(i, 0, 'grads.unsharded-accumulated', 'forward'), 551_936);
    assert.equal(
      bytes(split({ shard: 4, pp: 2, microbatches: 2 }), 0, 'grads.unsharded-accumulated', 'forward'),
      0,
      'with no more micro-batches than 1F1B keeps, every forward comes before the first backward',
    );
    assert.equal(
      bytes(
        split({ shard: 4, pp: 2, microbatches: 4, schedule: 'GPipe' }),
        1,
        'grads.unsharded-accumulated',
        'forward',
      ),
      0,
      'GPipe runs every forward first',
    );
    const gpipe = split({ shard: 4, pp: 2, microbatches: 4, schedule: 'GPipe' });
    assert.equal(bytes(gpipe, 0, 'grads.unsharded-accumulated', 0), 0, "GPipe's backward starts with none");
    assert.equal(bytes(gpipe, 0, 'grads.unsharded-accumulated', 1), 36_992 * 4, "then one unit's, in fp32");
    assert.equal(bytes(split({ shard: 8 }), 0, 'grads.unsharded-accumulated', 0), 0, 'not without pipeline parallel');
    // 1F1B keeps pp − rank micro-batches: rank 0 2 · 2 layers · 628,736 = 2,514,944; rank 1 1 · 2 · 628,736 = 1,257,472.
    assert.equal(bytes(i, 0, 'activations.saved'), 2_514_944);
    assert.equal(bytes(i, 1, 'activations.saved'), 1_257_472);
    assert.equal(bytes(i, 0, 'activations.logits'), 0);
    assert.equal(bytes(i, 1, 'activations.logits'), 2_560_000);
    // Interleaved 1F1B, 2 stages a rank: 4 stages of [1, 2, 1, 0] layers (6 over 4: 2, 2, 1, 1 less the
    // embedding and output); rank 0 holds stages 0 and 2 (1 layer each) and keeps (2 − 1)·2 + 2·(2 − 1 − 0) + 1 = 5
    // chunk-forwards of 1 layer: 5 · 628,736 = 3,143,680.
    const inter = split({ shard: 4, pp: 2, schedule: 'Interleaved1F1B', microbatches: 4 });
    assert.deepEqual(layersPerStage(4, 4), [1, 2, 1, 0]);
    assert.equal(bytes(inter, 0, 'activations.saved'), 3_143_680);
    // Rank 1 holds stages 1 (2 layers) and 3 (none) and keeps (2 − 1)·2 + 0 + 1 = 3 chunk-forwards: counted
    // as the larger chunk's, 3 · 2 · 628,736 = 3,772,416 (measured: all three were stage 1's).
    assert.equal(bytes(inter, 1, 'activations.saved'), 3_772_416);
  });

  it('PP 2 × FSDP 4: nothing is reduce-scattered until the last micro-batch is done; then every unit is still gathered', () => {
    const i = split({ shard: 4, pp: 2, microbatches: 4 });
    assert.equal(bytes(i, 0, 'comm.reduce-scatter', 1), 0, 'no reduce-scatter during the micro-batches');
    assert.equal(bytes(i, 0, 'grads.sharded', 1), 0);
    // After backward (the "optimizer" phase): one unit's bf16 gradient and fp32 reduce-scatter input,
    // 36,992 · (2 + 4) = 221,952, beside every gathered unit (275,968) and accumulated gradient (551,936).
    assert.equal(bytes(i, 0, 'comm.reduce-scatter', 'optimizer'), 221_952);
    assert.equal(bytes(i, 0, 'comm.gathered', 'optimizer'), 275_968);
    assert.equal(bytes(i, 0, 'grads.unsharded-accumulated', 'optimizer'), 551_936);
    assert.equal(
      bytes(split({ shard: 8 }), 0, 'comm.reduce-scatter', 'optimizer'),
      0,
      'without pipeline parallel: in backward',
    );
  });

  it("PP 2 without FSDP: the stage's gradients accumulate in .grad from the first micro-batch's backward", () => {
    const i = split({ shard: 1, pp: 2, microbatches: 4 });
    // Rank 0: 2 · 36,992 + 64,000 = 137,984 elements, fp32: 551,936 bytes, in forward too (1F1B's steady state).
    assert.equal(bytes(i, 0, 'grads.sharded', 'forward'), 551_936);
    assert.equal(bytes(i, 0, 'grads.sharded', 0), 551_936);
    assert.equal(
      bytes(split({ shard: 1, pp: 2, microbatches: 4, schedule: 'GPipe' }), 0, 'grads.sharded', 'forward'),
      0,
    );
  });

  it("PP 2: PipelineStage's receive buffers for every micro-batch, and the outputs kept for backward", () => {
    const i = split({ shard: 4, pp: 2, microbatches: 4 });
    // A stage boundary is 2 bytes · 256 tokens · 64 = 32,768. Rank 0 (first stage): 4 output-gradient
    // buffers and its 2 in-flight outputs, 6 · 32,768 = 196,608. Rank 1 (last): 4 input buffers, 1 of
    // them the saved input of its first layer while in flight: 3 · 32,768 = 98,304.
    assert.equal(bytes(i, 0, 'activations.pipeline-buffers'), 196_608);
    assert.equal(bytes(i, 1, 'activations.pipeline-buffers'), 98_304);
    assert.equal(bytes(split({ shard: 8 }), 0, 'activations.pipeline-buffers'), 0, 'not without pipeline parallel');
  });

  it("GPipe's last stage keeps every micro-batch's logits until its backward; 1F1B's one", () => {
    // 256 · 1000 logits: bf16, their fp32 copy and log_softmax's fp32 output, 2,560,000 bytes a micro-batch.
    assert.equal(bytes(split({ shard: 4, pp: 2, microbatches: 4 }), 1, 'activations.logits'), 2_560_000);
    const gpipe = split({ shard: 4, pp: 2, microbatches: 4, schedule: 'GPipe' });
    assert.equal(bytes(gpipe, 1, 'activations.logits'), 4 * 2_560_000);
    assert.equal(
      bytes(gpipe, 1, 'activations.logits', 1),
      3 * 2_560_000,
      "the first micro-batch's freed by its loss backward",
    );
  });

  it("full checkpointing keeps each layer's input only, sequence-sharded under SP: 2 · 256 · 64 / tp bytes a layer", () => {
    const i = { ...split({ shard: 4, tp: 2 }), checkpointing: { policy: 'every_n' as const, everyN: 1 } };
    // 2 bytes · 256 tokens · 64 / 2 = 16,384 a layer, × 4 = 65,536; one layer (347,136) recomputed in backward.
    assert.equal(bytes(i, 0, 'activations.saved'), 65_536);
    assert.equal(bytes(i, 0, 'activations.recompute', 1), 347_136);
  });
});
