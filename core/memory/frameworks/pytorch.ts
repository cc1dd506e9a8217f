// PyTorch training memory: DDP for NO_SHARD, ZeroRedundancyOptimizer for SHARD_OPTIMIZER, and
// FSDP2 (`fully_shard`, one unit per block plus the root) for the sharded strategies, with AdamW
// (foreach, the default on CUDA) and zero_grad(set_to_none=True).
import { parameterCounts } from '../model-shape';
import { bytesOf, shardGroupSize, worldSize, type MemoryInput } from '../memory-input';
import { activationTerms } from './activation-terms';
import { CACHING_ALLOCATOR_FRAGMENTATION, pytorchProcessTerms } from './gpu-overheads';
import { pytorchActivations } from './pytorch-activations';
import { constantTerm, type FrameworkTerms, type TermSpec } from './term-spec';

const FP32 = 4;

export function pytorchTerms(input: MemoryInput): FrameworkTerms {
  const counts = parameterCounts(input.model);
  const L = input.model.nLayers;
  const P = counts.total;
  const G = shardGroupSize(input);
  const N = worldSize(input);
  const p = bytesOf(input.precision.param);
  const fsdp = input.strategy === 'SHARD_GRAD_OP' || input.strategy === 'FULL_SHARD' || input.strategy === 'HYBRID_SHARD';
  const notes: string[] = [];
  const terms: TermSpec[] = [];

  // Parameters: FSDP keeps fp32 shards; DDP and ZeRO-1 keep full fp32 replicas.
  const localParams = fsdp ? P / G : P;
  const paramsOnHost = fsdp && input.offload.params;
  terms.push(constantTerm('params.master', 'params', fsdp ? `fp32 parameter shard (1/${G})` : 'fp32 parameters', localParams * FP32, paramsOnHost ? 'host' : 'device'));
  if (!fsdp && p < FP32) {
    // autocast caches the low-precision casts of the matrix weights; linear layers save them for backward.
    const matrixWeights = L * counts.block + input.model.vocabSize * input.model.dModel;
    terms.push({ id: 'params.autocast-copies', category: 'params', label: `${input.precision.param} weight casts kept by autocast`, where: 'device', forward: matrixWeights * p, backward: matrixWeights * p, optimizer: 0 });
  }

  // Gradients: fp32 like the parameters, allocated as backward produces them and freed by
  // zero_grad(set_to_none=True) — present in forward only while accumulating micro-steps.
  const localGrads = fsdp ? P / G : P;
  const gradsOnHost = fsdp && input.offload.params;
  const bucketView = !fsdp && N > 1 && input.ddp.gradientAsBucketView;
  if (!bucketView) {
    const headGrads = counts.head + counts.finalNorm;
    terms.push({
      id: 'grads.fp32',
      category: 'grads',
      label: fsdp ? `fp32 gradient shard (1/${G})` : 'fp32 gradients',
      where: gradsOnHost ? 'host' : 'device',
      forward: input.gradAccumSteps > 1 ? localGrads * FP32 : 0,
      backward: (step) => (input.gradAccumSteps > 1 ? localGrads : Math.min(localGrads, ((fsdp ? 0 : headGrads) + step * counts.block) / (fsdp ? G : 1))) * FP32,
      optimizer: localGrads * FP32,
    });
  }

  // AdamW: exp_avg and exp_avg_sq in fp32; ZeRO-1 and FSDP shard them.
  const localOptim = input.strategy === 'NO_SHARD' ? P : P / G;
  const optimOnHost = input.offload.optimizer || paramsOnHost;
  terms.push(constantTerm('optimizer.adamw', 'optimizer', 'AdamW moments (exp_avg, exp_avg_sq), fp32', localOptim * 2 * FP32, optimOnHost ? 'host' : 'device'));
  // foreach AdamW materialises one intermediate as large as the parameters it updates (sqrt of exp_avg_sq).
  terms.push({ id: 'workspace.optimizer', category: 'workspace', label: 'foreach AdamW intermediate', where: optimOnHost ? 'host' : 'device', forward: 0, backward: 0, optimizer: localOptim * FP32 });
  if (input.offload.optimizer && !fsdp) notes.push('PyTorch DDP has no optimizer offload; the estimate assumes a CPU optimizer step');

  terms.push(...(fsdp ? fsdpBuffers(input, counts, G) : ddpBuffers(input, P, N)));
  terms.push(...activationTerms(input, pytorchActivations(input)));
  terms.push(...pytorchProcessTerms(input, input.strategy === 'HYBRID_SHARD' ? 2 : 1));
  if (fsdp) notes.push('FSDP2 (fully_shard) with one unit per block; the root unit (embeddings, final norm, head) stays gathered between forward and backward');
  return { terms, backwardSteps: L + 1, fragmentation: input.device === 'cuda' ? CACHING_ALLOCATOR_FRAGMENTATION : 0, notes };
}

/**
 * FSDP's gathered units and gradient buffers: at most two block units gathered in forward (the
 * one computing and the one prefetched, as limit_all_gathers / FSDP2's implicit prefetch allow),
 * the root unit gathered from its first use in forward until the end of backward; in backward
 * the current unit's unsharded gradient, its reduce_dtype copy and the reduce-scatter output.
 * SHARD_GRAD_OP keeps every unit gathered from forward until its backward.
 */
function fsdpBuffers(input: MemoryInput, counts: ReturnType<typeof parameterCounts>, G: number): TermSpec[] {
  const L = input.model.nLayers;
  const p = bytesOf(input.precision.param);
  const r = bytesOf(input.precision.reduce);
  const unit = counts.block * p;
  const root = counts.root * p;
  const blocksAt = (step: number) => L - step + 1; // units not yet through backward, incl. the current one
  let gatheredForward: number;
  let gatheredBackward: (step: number) => number;
  if (input.strategy === 'SHARD_GRAD_OP') {
    gatheredForward = root + L * unit;
    gatheredBackward = (step) => root + (step === 0 ? L : blocksAt(step)) * unit;
  } else {
    const inFlight = Math.min(L, 2);
    const bwdInFlight = input.fsdp.backwardPrefetch === 'BACKWARD_PRE' ? Math.min(L, 2) : 1;
    gatheredForward = root + inFlight * unit;
    gatheredBackward = (step) => root + (step === 0 ? bwdInFlight - 1 : Math.min(bwdInFlight, blocksAt(step))) * unit;
  }
  const unitGrad = counts.block * (p + (r !== p ? r : 0)) + (counts.block / G) * r;
  return [
    { id: 'comm.gathered', category: 'comm', label: 'all-gathered parameters (root unit and block units in flight)', where: 'device', forward: gatheredForward, backward: gatheredBackward, optimizer: 0 },
    {
      id: 'comm.reduce-scatter',
      category: 'comm',
      label: 'unsharded gradients being reduce-scattered (root unit for all of backward, current block unit)',
      where: 'device',
      forward: 0,
      backward: (step) => counts.root * p + (step === 0 ? 0 : unitGrad),
      optimizer: 0,
    },
  ];
}

/** DDP's gradient buckets hold every gradient once more (unless gradients are views into them). */
function ddpBuffers(input: MemoryInput, P: number, N: number): TermSpec[] {
  if (N === 1) return [];
  const label = input.ddp.gradientAsBucketView ? 'DDP gradient buckets (gradients are views into them)' : `DDP gradient buckets (${input.ddp.bucketCapMb} MB each, all gradients)`;
  return [constantTerm('comm.ddp-buckets', 'comm', label, P * FP32)];
}
