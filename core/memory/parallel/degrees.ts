// A set of parallel degrees applied to an estimate's input: the plan takes them, and the world size
// (GPUs per node × nodes) follows their product. An input without a plan (a PyTorch or DeepSpeed
// config explored in the panel) gets one: its model as N-D parallelism sees it, FSDP over all ranks.
import type { MemoryInput } from '../memory-input';
import { ndModelFromShape } from './nd-model';
import { parallelWorld, type ParallelPlan } from './parallel-plan';
import type { PipelineSchedule } from './pipeline';
import { stagesPerRankOf } from './pipeline';

export interface Degrees {
  replicate: number;
  shard: number;
  tp: number;
  cp: number;
  pp: number;
  ep: number;
  schedule?: PipelineSchedule;
}

export const GPUS_PER_NODE = 8;

/** The input's plan, or one made for it: FSDP over its ranks (FULL_SHARD), the others 1. */
export function planOf(input: MemoryInput): ParallelPlan {
  if (input.parallel) return input.parallel;
  const world = input.nprocPerNode * input.nnodes;
  const sharded = input.strategy !== 'NO_SHARD' && input.strategy !== 'SHARD_OPTIMIZER';
  const replicate =
    input.strategy === 'HYBRID_SHARD'
      ? Math.max(1, world / (input.ranksPerNode ?? input.nprocPerNode))
      : sharded
        ? 1
        : world;
  return {
    model: ndModelFromShape(input.model),
    replicate,
    shard: world / replicate,
    tp: 1,
    cp: 1,
    pp: 1,
    ep: 1,
    etp: 1,
    sequenceParallel: false,
    schedule: '1F1B',
    stagesPerRank: 1,
    microbatches: Math.max(1, input.gradAccumSteps),
    reshardAfterForward: input.strategy !== 'SHARD_GRAD_OP',
    masterDtype: 'float32',
  };
}

export function withDegrees(input: MemoryInput, d: Degrees): MemoryInput {
  const base = planOf(input);
  const schedule = d.schedule ?? base.schedule;
  const plan: ParallelPlan = {
    ...base,
    replicate: d.replicate,
    shard: d.shard,
    tp: d.tp,
    cp: d.cp,
    pp: d.pp,
    ep: d.ep,
    etp: base.etp === base.tp ? d.tp : 1,
    sequenceParallel: d.tp > 1,
    schedule,
    stagesPerRank: d.pp > 1 ? stagesPerRankOf(schedule) : 1,
    // Keep the micro-batches per step at least the stages 1F1B needs.
    microbatches: d.pp > 1 ? Math.max(base.microbatches, d.pp * stagesPerRankOf(schedule)) : base.microbatches,
    reshardAfterForward: d.pp === 1,
  };
  const world = parallelWorld(plan);
  const perNode = Math.min(world, GPUS_PER_NODE);
  return {
    ...input,
    framework: 'torchtitan',
    parallel: plan,
    nprocPerNode: perNode,
    nnodes: Math.ceil(world / perNode),
    strategy: plan.shard * plan.cp > 1 ? (plan.replicate > 1 ? 'HYBRID_SHARD' : 'FULL_SHARD') : 'NO_SHARD',
  };
}

export function degreesOf(plan: ParallelPlan): Degrees {
  return {
    replicate: plan.replicate,
    shard: plan.shard,
    tp: plan.tp,
    cp: plan.cp,
    pp: plan.pp,
    ep: plan.ep,
    schedule: plan.schedule,
  };
}
