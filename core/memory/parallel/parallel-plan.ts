// How a run is split over its GPUs when it uses more than data parallelism: FSDP2 shard and replicate
// degrees, tensor (with sequence), context, pipeline and expert parallel degrees, as torchtitan's
// [parallelism] section gives them. A MemoryInput with `parallel` is estimated by ./nd-memory.ts.
import type { NdModel } from './nd-model';
import type { PipelineSchedule } from './pipeline';

export interface ParallelPlan {
  /** The model as N-D parallelism sees it (MoE, multi-head latent attention). */
  model: NdModel;
  /** FSDP2 replicate (HSDP's outer) and shard degrees. */
  replicate: number;
  shard: number;
  tp: number;
  cp: number;
  pp: number;
  /** Expert parallel and expert tensor parallel (MoE layers; they reuse shard × cp × tp ranks). */
  ep: number;
  etp: number;
  /** torchtitan shards norms and residuals along the sequence whenever tp > 1. */
  sequenceParallel: boolean;
  schedule: PipelineSchedule;
  /** Model chunks per pipeline rank (1 for 1F1B and GPipe, 2 for the looped schedules). */
  stagesPerRank: number;
  /** Pipeline micro-batches per step: local_batch_size / pipeline_parallel_microbatch_size. */
  microbatches: number;
  /** FSDP2 keeps gathered parameters from forward to backward when false (torchtitan's default under pipeline parallel). */
  reshardAfterForward: boolean;
  /** The weights' dtype in the optimizer (training.dtype): fp32 master weights, or bf16 throughout. */
  masterDtype: 'float32' | 'bfloat16';
  /** Which pipeline rank's memory to give; absent: the rank that needs most. */
  stage?: number;
}

export function parallelWorld(p: Pick<ParallelPlan, 'replicate' | 'shard' | 'cp' | 'tp' | 'pp'>): number {
  return p.replicate * p.shard * p.cp * p.tp * p.pp;
}

/** Ranks FSDP shards dense parameters over: data-parallel shard × context parallel (torchtitan's "fsdp" mesh). */
export function fsdpDegree(p: ParallelPlan): number {
  return p.shard * p.cp;
}

/** Ranks FSDP shards an expert's parameters over with expert parallel (the "efsdp" mesh). */
export function expertFsdpDegree(p: ParallelPlan): number {
  return p.ep > 1 ? Math.max(1, (p.shard * p.cp * p.tp) / (p.ep * p.etp)) : fsdpDegree(p);
}

/** "dp 8 (shard 8) × tp 8 × pp 4 (1F1B, 16 micro-batches)". */
export function describePlan(p: ParallelPlan): string {
  const parts = [
    p.replicate > 1 ? `dp ${p.replicate * p.shard} (replicate ${p.replicate} × shard ${p.shard})` : `dp ${p.shard}`,
  ];
  if (p.tp > 1) parts.push(`tp ${p.tp}${p.sequenceParallel ? '+sp' : ''}`);
  if (p.cp > 1) parts.push(`cp ${p.cp}`);
  if (p.pp > 1) parts.push(`pp ${p.pp} (${p.schedule}, ${p.microbatches} micro-batches)`);
  if (p.ep > 1) parts.push(`ep ${p.ep}${p.etp > 1 ? ` etp ${p.etp}` : ''}`);
  return parts.join(' × ');
}
