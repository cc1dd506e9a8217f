// What one layer saves for its backward, per micro-batch, under tensor / sequence / context parallel,
// in bytes: the tensors autograd keeps for the ops torchtitan's Llama 3 and DeepSeek-V3 layers run
// (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models", §4, with
// PyTorch's ops instead of Megatron's). Where this differs from the paper's 34·s·b·h/t (with SP):
// - DTensor's SequenceParallel all-gathers a norm's sequence-sharded output before the column-parallel
//   projections, and the matmul saves the gathered, full-sequence tensor (Megatron saves the shard and
//   gathers again in backward): 2·s·b·h per norm, not divided by t;
// - rotary embeddings run in fp32 complex (apply_rotary_emb: xq.float()), saved by the multiply;
// - SDPA (flash / memory-efficient) saves q, k, v, its output and an fp32 logsumexp, no s² matrix;
//   grouped-query attention keeps k and v at their own head count (enable_gqa);
// - SwiGLU saves w1's and w3's outputs, SiLU's output and the product (4 tensors of width F).
// Context parallel gives each rank s/cp tokens of every sequence.
import type { NdModel } from './nd-model';
import { isMoeLayer } from './nd-model';

export interface ActivationShape {
  /** Tokens of one sequence on this rank: seq_len / context parallel degree. */
  seq: number;
  microBatch: number;
  tp: number;
  /** Sequence parallel (torchtitan always uses it with tensor parallel): norm regions sharded by tp. */
  sequenceParallel: boolean;
  /** Expert parallel and expert tensor parallel degrees (MoE layers). */
  ep: number;
  etp: number;
  /** Bytes of an activation element (2 for bf16 compute). */
  bytes: number;
}

const FP32 = 4;

/** Bytes one layer keeps from its forward until its backward, with no checkpointing. */
export function layerActivationBytes(m: NdModel, layer: number, a: ActivationShape): number {
  return normAndAttentionBytes(m, a) + mlpBytes(m, layer, a);
}

/** The layer's input alone (what a fully checkpointed layer keeps): sequence-sharded with SP. */
export function layerInputBytes(m: NdModel, a: ActivationShape): number {
  return a.bytes * a.seq * a.microBatch * m.dModel * spShare(a);
}

/**
 * Op-level selective checkpointing (torchtitan's "op" policy saves SDPA's outputs and every other
 * matmul's output, recomputing the rest): the layer's input, attention's output and logsumexp, and
 * half of the matmul outputs.
 */
export function layerSelectiveBytes(m: NdModel, layer: number, a: ActivationShape): number {
  const sb = a.seq * a.microBatch;
  const t = a.tp;
  const attnOut = (a.bytes * sb * attentionValueWidth(m)) / t + (FP32 * sb * m.nHeads) / t;
  let mm = (sb * (queryWidth(m) + 2 * kvWidth(m))) / t + sb * m.dModel; // q, k, v and the output projection
  if (isMoeLayer(m, layer)) {
    const e = m.moe!;
    mm +=
      routedTokens(m, a) * ((2 * e.expertFfn) / expertTp(a) + m.dModel) +
      sb * ((2 * e.expertFfn * e.shared) / t + m.dModel);
  } else {
    mm += sb * ((2 * m.ffnHidden) / t + m.dModel);
  }
  return layerInputBytes(m, a) + attnOut + (a.bytes * mm) / 2;
}

function spShare(a: ActivationShape): number {
  return a.sequenceParallel && a.tp > 1 ? 1 / a.tp : 1;
}

function queryWidth(m: NdModel): number {
  return m.mla ? m.nHeads * (m.mla.qkNopeHeadDim + m.mla.qkRopeHeadDim) : m.nHeads * m.headDim;
}

function kvWidth(m: NdModel): number {
  return m.mla ? m.nHeads * (m.mla.qkNopeHeadDim + m.mla.qkRopeHeadDim) : m.nKvHeads * m.headDim;
}

function attentionValueWidth(m: NdModel): number {
  return m.mla ? m.nHeads * m.mla.vHeadDim : m.nHeads * m.headDim;
}

function normAndAttentionBytes(m: NdModel, a: ActivationShape): number {
  const sb = a.seq * a.microBatch;
  const X = sb * m.dModel;
  const t = a.tp;
  const B = a.bytes;
  const sp = spShare(a);
  // Two RMSNorms: each saves its (sequence-sharded) input and fp32 rstd; the gathered output feeds the projections.
  let bytes = 2 * (B * X * sp + FP32 * sb * sp) + 2 * B * X;
  if (m.mla) {
    const c = m.mla;
    const rope = c.qkRopeHeadDim;
    // Low-rank query (671B): its norm's input and output; the latent kv: wkv_a's output through kv_norm into wkv_b.
    if (c.qLoraRank > 0) bytes += B * sb * c.qLoraRank * 2 + FP32 * sb;
    bytes += B * sb * c.kvLoraRank * 2 + FP32 * sb;
    // Rotary parts in fp32 complex (q's per head, k's shared), then q and k assembled for SDPA.
    bytes += FP32 * sb * ((m.nHeads * rope) / t + rope);
  } else {
    bytes += (FP32 * sb * (queryWidth(m) + kvWidth(m))) / t;
  }
  // SDPA: q, k, v, output, fp32 logsumexp; the output made contiguous for the output projection.
  const v = m.mla ? m.nHeads * m.mla.vHeadDim : kvWidth(m);
  bytes +=
    (B * sb * (queryWidth(m) + kvWidth(m) + v)) / t +
    (2 * B * sb * attentionValueWidth(m)) / t +
    (FP32 * sb * m.nHeads) / t;
  return bytes;
}

/** Tokens a rank's experts process per micro-batch when the router spreads them evenly. */
function routedTokens(m: NdModel, a: ActivationShape): number {
  // Expert parallel exchanges tokens (all-to-all): each rank computes its experts for the tokens of
  // the ep ranks, ep·(tokens·k)/ep on average. Without it, every rank routes its own tokens.
  return a.seq * a.microBatch * m.moe!.topK;
}

function expertTp(a: ActivationShape): number {
  return a.ep > 1 ? a.etp : a.tp;
}

function mlpBytes(m: NdModel, layer: number, a: ActivationShape): number {
  const sb = a.seq * a.microBatch;
  const B = a.bytes;
  if (!isMoeLayer(m, layer)) {
    const F = m.ffnHidden / a.tp;
    return m.mlp === 'swiglu' ? 4 * B * sb * F : 2 * B * sb * F;
  }
  const e = m.moe!;
  const T = routedTokens(m, a);
  // Router scores (fp32) for every expert; the routed tokens gathered per expert, their SwiGLU, and the
  // expert outputs the combine weights multiply; the shared experts' SwiGLU on every token.
  return (
    FP32 * sb * e.experts +
    B * T * m.dModel * 2 +
    (4 * B * T * e.expertFfn) / expertTp(a) +
    (4 * B * sb * e.expertFfn * e.shared) / a.tp
  );
}

/** Context parallel's all-gathered keys and values (the allgather rotate method) while a layer's attention runs. */
export function contextParallelKvBytes(m: NdModel, a: ActivationShape, cp: number): number {
  if (cp <= 1) return 0;
  const v = m.mla ? m.nHeads * m.mla.vHeadDim : kvWidth(m);
  return (a.bytes * a.seq * cp * a.microBatch * (kvWidth(m) + v)) / a.tp;
}

/**
 * Logits and the loss's fp32 tensors on the last stage (loss parallel: the vocabulary sharded by tp):
 * the logits, their fp32 copy when computed in bf16, and log_softmax's fp32 output the loss saves.
 */
export function logitsBytes(m: NdModel, a: ActivationShape): number {
  const logits = (a.seq * a.microBatch * m.vocabSize) / a.tp;
  return logits * (a.bytes + (a.bytes < FP32 ? FP32 : 0) + FP32);
}
