// DeepSpeed ZeRO memory (Rajbhandari et al. 2020, "ZeRO", §3: 2Ψ + 2Ψ + KΨ with K = 12 for
// mixed-precision Adam) plus the buffers DeepSpeed's config sizes: the reduce (ipg) bucket, the
// all-gather bucket of stages 1–2, and stage 3's prefetch bucket, live-parameter cap and
// persistence threshold. Stage from the strategy: 0 NO_SHARD … 3 FULL_SHARD.
//
// Over a PEFT LoRA model (issue 36) ZeRO holds what DeepSpeed's source does with frozen parameters:
// the engine casts every parameter to the bf16/fp16 dtype (engine.py _configure_distributed_model);
// stages 1–2 flatten, partition and step only parameters with requires_grad (stage_1_and_2.py: the
// bit16 groups are the trainable parameters; frozen ones stay whole on every rank); stage 3
// partitions every parameter, frozen ones included (parameter_offload.py _convert_to_zero_parameters
// over module.parameters()), but makes gradient partitions, fp32 masters and optimizer states for the
// trainable ones only (stage3.py _get_trainable_parameter_groups). The reduce (ipg) buckets are
// allocated at reduce_bucket_size whatever the trainable size (stage_1_and_2.py setup_buckets,
// stage3.py _setup_for_real_optimizer: torch.empty(reduce_bucket_size)) — for LoRA often larger than
// every gradient they reduce. Activations are the PyTorch replay's of the PEFT model (./pytorch-replay-lora.ts).
import { parameterCounts, type ModelShape } from '../model-shape';
import { bytesOf, worldSize, type MemoryInput } from '../memory-input';
import { activationTerms } from './activation-terms';
import { CACHING_ALLOCATOR_FRAGMENTATION, pytorchProcessTerms } from './gpu-overheads';
import { loraActivations, zeroLora } from './deepspeed-lora';
import { pytorchActivations } from './pytorch-activations';
import { constantTerm, type FrameworkTerms, type TermSpec } from './term-spec';

const FP32 = 4;
const STAGE = { NO_SHARD: 0, SHARD_OPTIMIZER: 1, SHARD_GRAD_OP: 2, FULL_SHARD: 3, HYBRID_SHARD: 3 } as const;

export function deepspeedTerms(input: MemoryInput): FrameworkTerms {
  const counts = parameterCounts(input.model);
  const L = input.model.nLayers;
  const lora = zeroLora(input);
  // P: every parameter a rank holds (with LoRA the frozen base, the adapters and modules_to_save's copies);
  // T: those with requires_grad, the only ones with gradients, fp32 masters and optimizer states.
  const P = counts.total + (lora?.trainable ?? 0);
  const T = lora?.trainable ?? P;
  const N = worldSize(input);
  const stage = STAGE[input.strategy];
  const p = bytesOf(input.precision.param); // model weights and gradients live in the training dtype
  const mixed = p < FP32;
  const zero = input.zero;
  const notes: string[] = [];
  if (input.strategy === 'HYBRID_SHARD')
    notes.push('DeepSpeed has no HYBRID_SHARD; estimated as ZeRO stage 3 over all ranks');
  if (lora)
    notes.push(
      `ZeRO over the LoRA model: ${fmtCount(T)} trainable of ${fmtCount(P)} parameters; ${stage === 3 ? 'every parameter partitioned' : 'the frozen base whole on every rank'}, gradients and optimizer states for the trainable ones only`,
    );
  const terms: TermSpec[] = [];

  // Stage 3 partitions the weights, except parameters below the persistence threshold.
  const persistent =
    stage === 3
      ? smallParameters(input.model, zero.paramPersistenceThreshold) +
        (lora?.tensors ?? []).filter((n) => n < zero.paramPersistenceThreshold).reduce((a, n) => a + n, 0)
      : 0;
  const localParams = stage === 3 ? (P - persistent) / N + persistent : P;
  const paramsOnHost = stage === 3 && input.offload.params;
  terms.push(
    constantTerm(
      'params.model',
      'params',
      stage === 3
        ? `${input.precision.param} parameter partition (1/${N}) and persistent small parameters`
        : `${input.precision.param} parameters`,
      localParams * p,
      paramsOnHost ? 'host' : 'device',
    ),
  );

  // Gradients in the training dtype: whole at stages 0–1, partitioned from stage 2.
  const localGrads = stage >= 2 ? T / N : T;
  terms.push(
    constantTerm(
      'grads.model',
      'grads',
      stage >= 2 ? `${input.precision.param} gradient partition (1/${N})` : `${input.precision.param} gradients`,
      localGrads * p,
    ),
  );

  // Optimizer: fp32 master copy (mixed precision) and Adam moments, partitioned from stage 1.
  const localOptim = stage >= 1 ? T / N : T;
  const optimOnHost = input.offload.optimizer;
  const optimBytes = localOptim * ((mixed ? FP32 : 0) + 2 * FP32);
  terms.push(
    constantTerm(
      'optimizer.adam',
      'optimizer',
      mixed ? 'fp32 master weights and Adam moments' : 'Adam moments, fp32',
      optimBytes,
      optimOnHost ? 'host' : 'device',
    ),
  );
  if (mixed) {
    // The fp32 gradient partition the optimizer consumes, made at the step.
    terms.push({
      id: 'workspace.fp32-grads',
      category: 'workspace',
      label: 'fp32 gradient partition for the optimizer step',
      where: optimOnHost ? 'host' : 'device',
      forward: 0,
      backward: 0,
      optimizer: localOptim * FP32,
    });
  }
  if (stage < 3 && input.offload.params) notes.push('offload_param does nothing below ZeRO stage 3');

  // The reduce (ipg) buffer is allocated at reduce_bucket_size elements whatever the gradients' size
  // (stage_1_and_2.py setup_buckets; stage3.py at set-up, kept for the run). For full fine-tuning it
  // stays capped at the model's size, as the formulas had it (not measured either way).
  const reduceBucket = (lora ? zero.reduceBucketSize : Math.min(zero.reduceBucketSize, P)) * p;
  // Stages 1–2 with contiguous gradients reduce through an ipg buffer; overlap_comm keeps a second one
  // so one bucket fills while the other is reduced (stage_1_and_2.py's ipg_buffer).
  const buckets = (stage === 1 || stage === 2) && zero.overlapComm && zero.contiguousGradients ? 2 : 1;
  if (stage >= 1 && N > 1) {
    terms.push({
      id: 'comm.reduce-bucket',
      category: 'comm',
      label: `reduce bucket${buckets > 1 ? 's (two: overlap_comm)' : ''} (reduce_bucket_size ${zero.reduceBucketSize.toExponential(0)})`,
      where: 'device',
      // Stage 3 makes its buffer at set-up and keeps it; stages 1–2 at the first gradient, released after the step.
      // With LoRA, stages 1–2 make theirs at the first trainable gradient (a block's, after the loss and the frozen head).
      forward: stage === 3 && lora ? reduceBucket : 0,
      backward: lora && stage < 3 ? (step) => (step === 0 ? 0 : buckets * reduceBucket) : buckets * reduceBucket,
      optimizer: stage === 3 && lora ? reduceBucket : 0,
    });
  }
  let gatheredBytes = 0;
  if (stage === 1 || stage === 2) {
    if (N > 1)
      terms.push({
        id: 'comm.allgather-bucket',
        category: 'comm',
        label: `all-gather bucket (allgather_bucket_size ${zero.allgatherBucketSize.toExponential(0)})`,
        where: 'device',
        forward: 0,
        backward: 0,
        // All-gathered into the flat trainable group in place (utils.py all_gather_dp_groups): at most its size.
        optimizer: Math.min(zero.allgatherBucketSize, T) * p,
      });
  } else if (stage === 3) {
    // Gathered at once: the module being computed plus what the prefetch bucket fetches ahead,
    // never more than max_live_parameters nor the partitioned remainder of the model.
    const largestModule = Math.max(counts.block + (lora?.perBlock ?? 0), input.model.vocabSize * input.model.dModel);
    const live = Math.min(
      largestModule + zero.prefetchBucketSize,
      Math.max(zero.maxLiveParameters, largestModule),
      P - persistent,
    );
    gatheredBytes = live * p;
    terms.push({
      id: 'comm.gathered',
      category: 'comm',
      label: 'gathered parameters (current module + prefetch bucket)',
      where: 'device',
      forward: live * p,
      backward: live * p,
      optimizer: 0,
    });
  }
  if (stage === 0 && N > 1)
    terms.push(constantTerm('comm.allreduce-bucket', 'comm', 'gradient all-reduce bucket', reduceBucket));

  if (lora) {
    const acts = loraActivations(input);
    terms.push({
      id: 'activations.lora',
      category: 'activations',
      label: "the LoRA model's activations (frozen base, adapters' paths), as the PyTorch replay holds them",
      where: 'device',
      forward: acts.forward,
      // Step 0 is the loss and the head: with a frozen head no trainable gradient exists yet.
      backward: (step) => (step === 0 ? acts.beforeFirstGrad : acts.afterFirstGrad),
      optimizer: 0,
    });
  } else terms.push(...activationTerms(input, pytorchActivations(input)));
  terms.push(...pytorchProcessTerms(input, 1));
  return {
    terms,
    backwardSteps: L + 1,
    fragmentation: input.device === 'cuda' ? CACHING_ALLOCATOR_FRAGMENTATION : 0,
    notes,
    // Stages 1–2 allocate and free their reduce buckets every step: a GPU's allocator may keep one more such
    // segment. Stage 3 keeps a released parameter gathered when it is used again within
    // stage3_max_reuse_distance elements (partitioned_param_coordinator.py __params_to_release; 1e9 by default):
    // a tied embedding reused by the head, a block's weights between its forward and backward. Not modelled:
    // the range reaches every parameter gathered, up to stage3_max_live_parameters (measured: the Llama-3.2-1B
    // shape at 4 blocks, whose 1e9 covers the whole model, was 19 % over the figure).
    ...(lora
      ? {
          unsure: {
            why: ZERO_LORA_UNSURE,
            above:
              stage === 3
                ? Math.max(0, Math.min(zero.maxLiveParameters, P - persistent) * p - gatheredBytes)
                : reduceBucket,
          },
        }
      : {}),
  };
}

/** Why a ZeRO estimate over a LoRA model is shown as a range. */
export const ZERO_LORA_UNSURE = 'ZeRO over a LoRA model is not measured on a GPU';

function fmtCount(n: number): string {
  return n >= 1e9 ? `${(n / 1e9).toFixed(2)} B` : `${(n / 1e6).toFixed(1)} M`;
}

/** Parameters of tensors with fewer elements than the threshold (norms, biases): kept whole at stage 3. */
function smallParameters(m: ModelShape, threshold: number): number {
  const d = m.dModel;
  const kv = (m.nKvHeads * d) / m.nHeads;
  const tensors: number[] = [];
  const norm = (n: number) => (m.norm === 'layernorm' ? [n, n] : [n]);
  for (let i = 0; i < m.nLayers; i++) {
    tensors.push(...norm(d), ...norm(d));
    if (m.bias) tensors.push(d, kv, kv, d, m.ffnHidden, d, ...(m.mlp === 'swiglu' ? [m.ffnHidden] : []));
  }
  tensors.push(...norm(d));
  return tensors.filter((n) => n < threshold).reduce((s, n) => s + n, 0);
}
