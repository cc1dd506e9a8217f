// Per-GPU memory of a run split by N-D parallelism (torchtitan's way: FSDP2 over shard × cp ranks,
// HSDP replicas, tensor + sequence parallel, context parallel, pipeline parallel with its schedule,
// expert parallel for MoE), per pipeline rank, since stages differ: the first holds the embedding and
// the most micro-batches in flight, the last the output layer and the logits. The estimate is the
// rank that needs most (or `plan.stage`); the notes give the first's and the last's.
//
// Per rank, for the layers of its stages (bytes):
//   master weights, gradients, AdamW moments: the rank's shard of each parameter — dense ones / (tp ·
//   shard · cp), routed experts / (ep · etp · efsdp) — × (4 + 4 + 8) with fp32 master weights;
//   gathered bf16 parameters: two FSDP units (the one computing and the one prefetched), or all of the
//   stage's when reshard_after_forward is off (pipeline parallel), or none without FSDP;
//   under pipeline parallel with FSDP, the stage's unsharded gradients accumulated in fp32 over the
//   micro-batches (the schedule turns gradient sync off until the last one);
//   backward at two moments, the larger counts: its start (every activation still saved, the loss's
//   gradient of the logits) and a step later (one layer's activations freed, that unit's bf16
//   gradients and fp32 reduce-scatter input, its sharded gradients), as FSDPMemTracker shows it;
//   activations: nd-activations.ts per layer × the micro-batches in flight (pipeline.ts);
//   the last stage's logits; the CUDA context, NCCL communicators and cuBLAS workspaces; and 5 % of
//   allocated memory for the caching allocator's fragmentation (as for DeepSpeed).
import { CACHING_ALLOCATOR_FRAGMENTATION, pytorchProcessTerms } from '../frameworks/gpu-overheads';
import type { FrameworkTerms, TermSpec } from '../frameworks/term-spec';
import { bytesOf, type MemoryInput } from '../memory-input';
import {
  contextParallelKvBytes,
  layerActivationBytes,
  layerInputBytes,
  layerSelectiveBytes,
  logitsBytes,
  type ActivationShape,
} from './nd-activations';
import { embeddingParameters, layerParameters, outputParameters, type NdModel } from './nd-model';
import { describePlan, expertFsdpDegree, fsdpDegree, type ParallelPlan } from './parallel-plan';
import { chunkForwardsInFlight, layersPerStage, stagesOfRank } from './pipeline';

const FP32 = 4;

export interface RankMemory {
  rank: number;
  terms: TermSpec[];
  /** Device total at the worst phase, for choosing the rank. */
  peak: number;
}

export function ndTerms(input: MemoryInput): FrameworkTerms {
  const plan = input.parallel!;
  const ranks =
    plan.pp === 1
      ? [0]
      : plan.stage !== undefined
        ? [Math.min(plan.pp - 1, Math.max(0, plan.stage))]
        : Array.from({ length: plan.pp }, (_, r) => r);
  const all = ranks.map((r) => rankMemory(input, plan, r));
  const worst = all.reduce((a, b) => (b.peak > a.peak ? b : a));
  const notes = [`N-D parallel: ${describePlan(plan)}, ${plan.model.name}`];
  if (plan.pp > 1) {
    const first = all.find((x) => x.rank === 0);
    const last = all.find((x) => x.rank === plan.pp - 1);
    const gib = (b: number) => `${(b / 2 ** 30).toFixed(1)} GiB`;
    if (first && last)
      notes.push(
        `pipeline ranks differ: first ${gib(first.peak)} (embedding, ${chunkForwardsInFlight(plan.schedule, 0, plan.pp, plan.microbatches, plan.stagesPerRank)} micro-batch chunks in flight), last ${gib(last.peak)} (output layer and logits); shown: pipeline rank ${worst.rank}`,
      );
  }
  // bench/results/memory-nd-2026-11-26-published.md: torchtitan's published 405B pipeline runs needed 1.07–1.48× this;
  // bench/results/memory-nd-pp-2026-11-26.md: PyTorch's MemTracker on the CPU, real processes, within −16…+7 %.
  if (plan.pp > 1)
    notes.push(
      "pipeline parallel: within −16…+7 % of PyTorch's MemTracker on a small model on the CPU (bench/results/memory-nd-pp-2026-11-26.md), but 7–33 % below torchtitan's published H100 figures (max reserved, with compile and float8: bench/results/memory-nd-2026-11-26-published.md); read this one as a lower bound",
    );
  if (plan.pp > 1 && !['1F1B', 'Interleaved1F1B', 'GPipe', 'LoopedBFS'].includes(plan.schedule))
    notes.push(`${plan.schedule}: activations in flight counted as Interleaved1F1B's (a bound)`);
  if (plan.model.moe) notes.push('MoE: routed tokens assumed spread evenly over the experts');
  return { terms: worst.terms, backwardSteps: 2, fragmentation: CACHING_ALLOCATOR_FRAGMENTATION, notes };
}

/** The terms of pipeline rank `rank`. */
export function rankMemory(input: MemoryInput, plan: ParallelPlan, rank: number): RankMemory {
  const m = plan.model;
  const stages = plan.pp * plan.stagesPerRank;
  const perStage = layersPerStage(m.nLayers, stages);
  const starts = perStage.map((_, i) => perStage.slice(0, i).reduce((s, x) => s + x, 0));
  const mine = stagesOfRank(rank, plan.pp, plan.stagesPerRank, plan.schedule).filter((s) => s < stages);
  const layers = mine.flatMap((s) => Array.from({ length: perStage[s] }, (_, k) => starts[s] + k));
  const first = mine.includes(0);
  const last = mine.includes(stages - 1);
  const terms: TermSpec[] = [];

  // ---- parameters, gradients, optimizer: this rank's shards -------------------------------------
  const fsdp = fsdpDegree(plan);
  const efsdp = expertFsdpDegree(plan);
  const expertSplit = plan.ep > 1 ? plan.ep * plan.etp : plan.tp;
  const expertFsdp = plan.ep > 1 ? efsdp : fsdp;
  let sharded = 0;
  let largestUnit = 0;
  let allUnits = 0;
  for (const l of layers) {
    const p = layerParameters(m, l);
    sharded += p.tpSharded / plan.tp / fsdp + p.replicated / fsdp + p.experts / expertSplit / expertFsdp;
    const unit = p.tpSharded / plan.tp + p.replicated + p.experts / expertSplit;
    largestUnit = Math.max(largestUnit, unit);
    allUnits += unit;
  }
  const root = (first ? embeddingParameters(m) : 0) / plan.tp + (last ? outputParameters(m, first) / plan.tp : 0);
  sharded += root / fsdp;
  const master = plan.masterDtype === 'float32' ? FP32 : 2;
  const usesFsdp = fsdp > 1 || (plan.ep > 1 && efsdp > 1);
  const inFlight =
    plan.pp > 1 ? chunkForwardsInFlight(plan.schedule, rank, plan.pp, plan.microbatches, plan.stagesPerRank) : 1;
  // Measured (bench/memory-nd/measure_pp.py, bench/results/memory-nd-pp-2026-11-26.md): when a rank runs
  // more chunk-forwards than it holds at once (1F1B with more micro-batches than pp − rank, interleaved
  // past its warm-up), its most activations in flight recur after its first backward, so the gradients
  // accumulated over the micro-batches are there with them, in forward as well as in backward.
  const steady = plan.pp > 1 && inFlight < plan.microbatches * plan.stagesPerRank;
  const where = `${layers.length} layer${layers.length === 1 ? '' : 's'}${first ? ' + embedding' : ''}${last ? ' + output' : ''}`;
  const shardWords = `1/${plan.tp * fsdp} of dense${m.moe ? `, 1/${expertSplit * expertFsdp} of experts` : ''}`;
  terms.push({
    id: 'params.master',
    category: 'params',
    label: `${plan.masterDtype === 'float32' ? 'fp32 master' : 'bf16'} parameters of ${where} (${shardWords})`,
    where: 'device',
    forward: sharded * master,
    backward: sharded * master,
    optimizer: sharded * master,
  });
  const unitShard = (largestUnit / Math.max(1, fsdp)) * master;
  // Pipeline parallel without FSDP: each micro-batch's backward adds into the stage's .grad, which stays
  // from the first micro-batch's backward to the optimizer step (measured: pp 2 × dp 1, 1F1B).
  const accumulatedInGrad = plan.pp > 1 && !usesFsdp;
  const allGrads = sharded * master;
  // In backward (step = units done): accumulating in .grad, all from the first backward (or from
  // before it, in 1F1B's steady state); with FSDP under pipeline parallel, none until after backward;
  // otherwise the first unit's shard once one is reduced.
  const gradsInBackward = (step: number) => {
    if (accumulatedInGrad) return steady || step > 0 ? allGrads : 0;
    return step === 0 || plan.pp > 1 ? 0 : unitShard;
  };
  terms.push({
    id: 'grads.sharded',
    category: 'grads',
    label: accumulatedInGrad
      ? `the stage's gradients (${plan.masterDtype === 'float32' ? 'fp32' : 'bf16'}), accumulated over the micro-batches from the first backward to the step`
      : `gradients, sharded as the parameters (${plan.masterDtype === 'float32' ? 'fp32' : 'bf16'}): all of them at the step, the first unit's in backward`,
    where: 'device',
    forward: accumulatedInGrad && steady ? allGrads : 0,
    backward: gradsInBackward,
    optimizer: allGrads,
  });
  const adam = sharded * (plan.masterDtype === 'float32' ? 2 * FP32 : 2 * 2);
  terms.push({
    id: 'optimizer.adamw',
    category: 'optimizer',
    label: 'AdamW exp_avg and exp_avg_sq, sharded as the parameters',
    where: 'device',
    forward: adam,
    backward: adam,
    optimizer: adam,
  });

  // ---- gathered parameters and gradient buffers (FSDP2) ----------------------------------------
  const compute = bytesOf(input.precision.param);
  if (usesFsdp) {
    // Without resharding, every unit the stage holds stays gathered: its layers, and the embedding
    // on the first stage (the output layer on the last is added below, resharded or not).
    const gathered = plan.reshardAfterForward
      ? Math.min(2, layers.length) * largestUnit
      : allUnits + (first ? embeddingParameters(m) / plan.tp : 0);
    const label = plan.reshardAfterForward
      ? 'all-gathered bf16 parameters: the unit computing and the one prefetched'
      : `all-gathered bf16 parameters of every unit of the stage (reshard_after_forward off${plan.pp > 1 ? ' under pipeline parallel' : ''})`;
    const gatheredBytes = (gathered + (last ? outputParameters(m, first) / plan.tp : 0)) * compute;
    terms.push({
      id: 'comm.gathered',
      category: 'comm',
      label,
      where: 'device',
      forward: gatheredBytes,
      backward: gatheredBytes,
      // Under pipeline parallel the phase after backward is FSDP's reduce, when every unit is still gathered.
      optimizer: plan.pp > 1 ? gatheredBytes : 0,
    });
    if (plan.pp > 1) {
      // torch.distributed.pipelining runs every micro-batch's backward with FSDP's gradient sync and
      // resharding off (PipelineStage.backward_maybe_with_nosync): each unsharded gradient is
      // accumulated, in the fp32 reduce dtype (FSDPParam.to_accumulated_grad_if_needed), for every
      // unit of the stage, and reduce-scattered only after the last micro-batch (perform_reduce_grad),
      // when the stage holds no activations: the estimate's "optimizer" phase stands for that moment
      // and the step after it (one bound for both: the first unit's reduce with every unit gathered and
      // every gradient accumulated, plus all the sharded gradients the step has).
      const stageParameters = allUnits + root;
      terms.push({
        id: 'grads.unsharded-accumulated',
        category: 'grads',
        label:
          "the stage's unsharded gradients, accumulated in fp32 over its micro-batches (FSDP's sync off until the last)",
        where: 'device',
        forward: steady ? stageParameters * FP32 : 0,
        // Otherwise (GPipe) backward starts with none, then one unit's (measured).
        backward: (step) => (steady ? stageParameters : step === 0 ? 0 : largestUnit) * FP32,
        optimizer: stageParameters * FP32,
      });
    }
    const reduceScatter = largestUnit * (compute + FP32);
    terms.push({
      id: 'comm.reduce-scatter',
      category: 'comm',
      label: "one unit's unsharded gradients and its fp32 reduce-scatter input",
      where: 'device',
      forward: 0,
      backward: (step) => (step === 0 || plan.pp > 1 ? 0 : reduceScatter),
      optimizer: plan.pp > 1 ? reduceScatter : 0,
    });
  } else if (compute < master) {
    terms.push({
      id: 'params.autocast-copies',
      category: 'params',
      label: 'bf16 copies of the layer computing (autocast, no FSDP)',
      where: 'device',
      forward: largestUnit * compute,
      backward: largestUnit * compute,
      optimizer: 0,
    });
  }

  // ---- activations ------------------------------------------------------------------------------
  const a: ActivationShape = {
    seq: input.seqLen / plan.cp,
    microBatch: input.microBatch,
    tp: plan.tp,
    sequenceParallel: plan.sequenceParallel,
    ep: plan.ep,
    etp: plan.etp,
    bytes: bytesOf(input.precision.activation),
  };
  const c = input.checkpointing;
  const saved = (l: number, index: number) => {
    if (c.policy === 'every_n' && index % Math.max(1, c.everyN) === 0) return layerInputBytes(m, a);
    if (c.policy === 'selective') return layerSelectiveBytes(m, l, a);
    return layerActivationBytes(m, l, a);
  };
  const perStageBytes = mine.map((s) => {
    let sum = 0;
    for (let k = 0; k < perStage[s]; k++) sum += saved(starts[s] + k, starts[s] + k);
    return sum;
  });
  // Which of the rank's chunks the forwards in flight belong to depends on the schedule's order: the
  // largest chunk's for all of them, a bound. (The mean understated a measured interleaved rank whose
  // chunks were 2 layers and 0 by 18 %: three forwards of the 2-layer chunk were in flight.)
  const perChunk = Math.max(0, ...perStageBytes);
  const held = perChunk * inFlight;
  const label =
    plan.pp > 1
      ? `activations of ${inFlight} micro-batch chunk${inFlight > 1 ? 's' : ''} in flight (${plan.schedule}, pipeline rank ${rank})`
      : 'activations saved for backward';
  const oneLayer = layers.length ? Math.max(...layers.map((l, i) => saved(l, i))) : 0;
  terms.push({
    id: 'activations.saved',
    category: 'activations',
    label,
    where: 'device',
    forward: held,
    backward: (step) => (step === 0 ? held : Math.max(0, held - oneLayer)),
    optimizer: 0,
  });
  const largestLayer = Math.max(0, ...layers.map((l) => layerActivationBytes(m, l, a)));
  if (c.policy !== 'none')
    terms.push({
      id: 'activations.recompute',
      category: 'activations',
      label: 'a checkpointed layer recomputed in backward',
      where: 'device',
      forward: 0,
      backward: (step) => (step === 0 ? 0 : largestLayer),
      optimizer: 0,
    });
  const cpKv = contextParallelKvBytes(m, a, plan.cp);
  if (cpKv > 0)
    terms.push({
      id: 'comm.context-parallel',
      category: 'comm',
      label: `keys and values all-gathered over ${plan.cp} context-parallel ranks for one layer's attention`,
      where: 'device',
      forward: cpKv,
      backward: cpKv,
      optimizer: 0,
    });
  if (last) {
    const logits = logitsBytes(m, a);
    // The last stage computes each micro-batch's loss right after its forward and keeps the logits and
    // log_softmax's output until that micro-batch's backward: one micro-batch at a time under 1F1B and
    // the interleaved schedules (the last stage runs its backward straight after its forward), every
    // one under GPipe and LoopedBFS (measured: pp 2 × dp 2 GPipe, bench/results/memory-nd-pp-2026-11-26.md).
    const logitsInFlight =
      plan.pp > 1 && (plan.schedule === 'GPipe' || plan.schedule === 'LoopedBFS') ? plan.microbatches : 1;
    terms.push({
      id: 'activations.logits',
      category: 'activations',
      label: `logits and the loss's fp32 copies${logitsInFlight > 1 ? ` of ${logitsInFlight} micro-batches` : ''}${plan.tp > 1 ? ` (vocabulary sharded over ${plan.tp} tensor-parallel ranks)` : ''}`,
      where: 'device',
      forward: logitsInFlight * logits,
      backward: (step) => (step === 0 ? logitsInFlight : logitsInFlight - 1) * logits,
      optimizer: 0,
    });
    const lossGrad = (FP32 * a.seq * a.microBatch * m.vocabSize) / plan.tp;
    terms.push({
      id: 'activations.loss-grad',
      category: 'activations',
      label: "the loss's fp32 gradient of the logits",
      where: 'device',
      forward: 0,
      backward: (step) => (step === 0 ? lossGrad : 0),
      optimizer: 0,
    });
  }
  if (plan.pp > 1) {
    // torch.distributed.pipelining's PipelineStage allocates, for every micro-batch, a buffer to receive
    // the stage's input (all but the first stage) and one to receive its output's gradient (all but the
    // last), and keeps them (_setup_forward_recv_info, _create_grad_recv_info); it also keeps each
    // in-flight chunk's output for its backward (fwd_cache), which no layer of the stage saves. A
    // received input is the first layer's saved input while its chunk is in flight (counted above).
    // Measured on the CPU: bench/results/memory-nd-pp-2026-11-26.md.
    const boundary = layerInputBytes(m, a);
    const perChunkInFlight = Math.min(plan.microbatches, inFlight / Math.max(1, mine.length));
    let buffers = 0;
    for (const s of mine) {
      if (s !== stages - 1) buffers += plan.microbatches + perChunkInFlight;
      if (s !== 0) buffers += plan.microbatches - (perStage[s] > 0 ? perChunkInFlight : 0);
    }
    terms.push({
      id: 'activations.pipeline-buffers',
      category: 'activations',
      label: `pipeline receive buffers (${plan.microbatches} micro-batches' inputs and output gradients) and the outputs kept for backward`,
      where: 'device',
      forward: buffers * boundary,
      backward: buffers * boundary,
      optimizer: buffers * boundary,
    });
  }
  terms.push({
    id: 'other.batch',
    category: 'other',
    label: 'token ids and targets (int64)',
    where: 'device',
    forward: 16 * a.seq * input.microBatch,
    backward: 16 * a.seq * input.microBatch,
    optimizer: 0,
  });

  // ---- the process: CUDA context, a communicator per mesh dimension in use, cuBLAS ---------------
  const meshes = [fsdp, plan.replicate, plan.tp, plan.pp, plan.ep].filter((d) => d > 1).length;
  terms.push(...pytorchProcessTerms(input, meshes));

  const at = (t: TermSpec, phase: 'forward' | 'optimizer' | 0 | 1) =>
    phase === 0 || phase === 1 ? (typeof t.backward === 'number' ? t.backward : t.backward(phase)) : t[phase];
  const total = (phase: 'forward' | 'optimizer' | 0 | 1) =>
    terms.reduce((s, t) => s + (t.where === 'device' ? at(t, phase) : 0), 0);
  return { rank, terms, peak: Math.max(total('forward'), total(0), total(1), total('optimizer')) };
}

/** The model the estimate is for (plans carry their own; the panel shows its parameter count). */
export function planModel(input: MemoryInput): NdModel | undefined {
  return input.parallel?.model;
}
