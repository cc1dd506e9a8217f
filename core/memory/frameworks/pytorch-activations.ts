// Activations a PyTorch transformer keeps for backward, per block, from the tensors autograd saves
// (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models", §4,
// generalised to any MLP width, grouped-query attention, SwiGLU and RMSNorm). Shared by the
// PyTorch (FSDP / DDP) and DeepSpeed models, which run the same module code.
import { bytesOf, type MemoryInput } from '../memory-input';
import type { BlockActivations } from './activation-terms';

const FP32 = 4;
const MASK = 1; // dropout masks are bool tensors

export function pytorchActivations(input: MemoryInput, microBatch = input.microBatch): BlockActivations {
  const m = input.model;
  const a = bytesOf(input.precision.activation);
  const s = input.seqLen;
  const t = microBatch * s; // tokens per micro-batch
  const h = m.dModel;
  const kv = (m.nKvHeads * h) / m.nHeads;
  const f = m.ffnHidden;
  const heads = m.nHeads;
  const drop = input.dropout > 0;
  const normStats = (m.norm === 'layernorm' ? 2 : 1) * FP32; // mean and rstd per token, fp32

  // Attention core: eager keeps softmax probabilities (b·heads·s²), plus their dropout mask and
  // output with dropout; flash keeps only the output and a logsumexp per head and token.
  const core =
    input.attention === 'flash' ? heads * t * FP32 : microBatch * heads * s * s * (a + (drop ? MASK + a : 0));
  // Linear inputs and attention inputs: norm1 in, qkv in (norm1 out), q, k, v, out-proj in.
  const attention = t * a * (h + h + h + 2 * kv + h) + t * normStats + (drop ? t * h * MASK : 0) + core;
  // MLP: norm2 in, fc in (norm2 out), then GELU in + out, or SwiGLU gate, up, silu(gate), product.
  const mlpHidden = m.mlp === 'gelu' ? 2 * t * f * a : 4 * t * f * a;
  const mlp = t * a * 2 * h + t * normStats + mlpHidden + (drop ? t * h * MASK : 0);
  const fullBlock = attention + mlp;

  // Selective recomputation (Korthikanti §5): keep the matrix-product outputs, recompute norms,
  // activation functions and the attention core: block input, q/k/v, attention output, the
  // residual before norm2, and the MLP's first product(s).
  const selectiveBlock =
    t * a * (h + h + 2 * kv + h + h) +
    (input.attention === 'flash' ? heads * t * FP32 : 0) +
    t * a * (m.mlp === 'gelu' ? f : 2 * f);

  // While a block runs backward: gradients of the MLP hidden (two of width f) or of the softmax
  // (two of b·heads·s² in eager attention), plus the residual gradient flowing through.
  const hiddenGrads = 2 * t * f * a;
  const softmaxGrads = input.attention === 'eager' ? 2 * microBatch * heads * s * s * a : 0;
  const backwardTransient = Math.max(hiddenGrads, softmaxGrads) + 2 * t * h * a;

  const V = m.vocabSize;
  // The logits are kept by the caller (they are returned); cross-entropy upcasts them to fp32
  // (autocast's fp32 list) and saves log_softmax's fp32 output.
  const upcast = a < FP32 ? t * V * FP32 : 0;
  const logitsKept = t * V * a;
  const logSoftmax = t * V * FP32;
  return {
    fullBlock,
    selectiveBlock,
    blockInput: t * h * a,
    backwardTransient,
    // Final norm input and stats, head input (final norm output), embedding dropout mask.
    outsideBlocks: t * a * 2 * h + t * normStats + (drop ? t * h * MASK : 0),
    logits: {
      // Peak inside log_softmax: logits, their fp32 copy, and the fp32 output.
      forward: logitsKept + upcast + logSoftmax,
      // Peak inside log_softmax's backward: logits, saved output, incoming and outgoing fp32 gradients.
      backwardStart: logitsKept + 3 * t * V * FP32,
      kept: logitsKept,
    },
  };
}
