// PEFT LoRA and bitsandbytes quantisation as the memory replay needs them (issue 36): which linear
// modules of a block carry adapters, the adapters' sizes, and how many bytes a quantised weight
// takes. The replay (frameworks/pytorch-replay.ts) allocates what these say; this file holds the
// arithmetic alone so tests can check it by hand.
//
// Sources: PEFT's LoraLayer (tuners/lora/layer.py: lora_A is Linear(in, r), lora_B Linear(r, out),
// no biases; `all-linear` is every nn.Linear / Conv1D but the output layer), bitsandbytes' Params4bit
// (two 4-bit codes per byte, one fp32 absmax per 64-element block; with double quantisation the
// absmax become uint8 with one fp32 absmax per 256 of them, a 256-entry fp32 code and an fp32 offset)
// and Int8Params (one byte per element and one fp32 scale per output row, SCB).
import type { LoraPlan, QuantKind, WeightStorage } from './memory-input';
import { headDimOf, type ModelShape } from './model-shape';
import type { LinearName } from './frameworks/pytorch-block';

/** One nn.Linear of a decoder block: the replay's role it belongs to, the names PEFT matches, its sizes. */
export interface BlockModule {
  role: LinearName;
  /** Module names (the last component of the module path) the families give this linear. */
  names: string[];
  in: number;
  out: number;
}

/** The block's linear modules, in the order the block runs them (MoE blocks: undefined, not modelled). */
export function blockModules(m: ModelShape): BlockModule[] | undefined {
  if (m.experts) return undefined;
  const C = m.dModel;
  const q = m.nHeads * headDimOf(m);
  const kv = m.nKvHeads * headDimOf(m);
  const F = m.ffnHidden;
  // GPT-2 names its attention output and its MLP output both c_proj: PEFT's suffix match takes both.
  const proj: BlockModule = { role: 'proj', names: ['o_proj', 'c_proj', 'dense', 'out_proj'], in: q, out: C };
  if (m.mlp === 'gelu')
    return [
      { role: 'qkv', names: ['c_attn', 'query_key_value', 'qkv_proj', 'Wqkv'], in: C, out: q + 2 * kv },
      proj,
      { role: 'fc', names: ['c_fc', 'dense_h_to_4h', 'fc1', 'up_proj'], in: C, out: F },
      { role: 'down', names: ['c_proj', 'dense_4h_to_h', 'fc2', 'down_proj'], in: F, out: C },
    ];
  return [
    { role: 'qkv', names: ['q_proj'], in: C, out: q },
    { role: 'qkv', names: ['k_proj'], in: C, out: kv },
    { role: 'qkv', names: ['v_proj'], in: C, out: kv },
    proj,
    { role: 'gate', names: ['gate_proj', 'w1'], in: C, out: F },
    { role: 'up', names: ['up_proj', 'w3'], in: C, out: F },
    { role: 'down', names: ['down_proj', 'w2'], in: F, out: C },
  ];
}

/** PEFT's default targets when a config names none (TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING): q and v, or the fused q/k/v. */
export function defaultTargets(m: ModelShape): string[] {
  return m.mlp === 'gelu' ? ['c_attn', 'query_key_value'] : ['q_proj', 'v_proj'];
}

/** The block modules carrying an adapter: every one for `all-linear`, else those whose name a target ends with (none named: PEFT's defaults). */
export function adaptedModules(m: ModelShape, lora: LoraPlan): BlockModule[] {
  const all = blockModules(m) ?? [];
  if (lora.targets === 'all-linear') return all;
  // PEFT matches a target against the module's full name or its last components; a dotted target
  // ("self_attn.q_proj") is matched by its last component here.
  const targets = lora.targets.length ? lora.targets : defaultTargets(m);
  const wanted = new Set(targets.map((t) => t.split('.').pop()!));
  return all.filter((mod) => mod.names.some((n) => wanted.has(n)));
}

/** Elements of the adapters of one block: r × in for A and out × r for B of each adapted module. */
export function loraElementsPerBlock(m: ModelShape, lora: LoraPlan): number {
  return adaptedModules(m, lora).reduce((s, mod) => s + lora.r * (mod.in + mod.out), 0);
}

/** Target names of a config that match no linear of this model (PEFT would refuse the config if none matched). */
export function unmatchedTargets(m: ModelShape, lora: LoraPlan): string[] {
  if (lora.targets === 'all-linear') return [];
  const names = new Set((blockModules(m) ?? []).flatMap((mod) => mod.names));
  const extra = new Set(['lm_head', 'embed_tokens', 'wte']);
  return lora.targets.filter((t) => !names.has(t.split('.').pop()!) && !extra.has(t));
}

export const NF4_BLOCK = 64;
/** bitsandbytes quantises the fp32 absmax of 4-bit blocks in blocks of 256 (double quantisation). */
export const NESTED_BLOCK = 256;

/**
 * The tensors bitsandbytes keeps for one quantised weight of `numel` elements and `out` rows, in
 * bytes: 4-bit: the packed codes (numel / 2), the absmax (fp32 per 64 elements, or with double
 * quantisation uint8 per 64 plus an fp32 absmax per 256 blocks, its 256-entry fp32 code and fp32
 * offset), the 16-entry fp32 code; int8: the codes and an fp32 scale per row.
 */
export function quantizedTensors(numel: number, out: number, kind: QuantKind, doubleQuant: boolean): number[] {
  if (kind === 'int8') return [numel, out * 4];
  const blocks = Math.ceil(numel / NF4_BLOCK);
  const codes = Math.ceil(numel / 2);
  const code = 16 * 4;
  if (!doubleQuant) return [codes, blocks * 4, code];
  return [codes, blocks, Math.ceil(blocks / NESTED_BLOCK) * 4, 256 * 4, 4, code];
}

export function quantizedBytes(numel: number, out: number, kind: QuantKind, doubleQuant: boolean): number {
  return quantizedTensors(numel, out, kind, doubleQuant).reduce((s, b) => s + b, 0);
}

/** Bytes per element of the weights as stored: the loading dtype (the quantised linears apart). */
export function storedBytes(weights: WeightStorage | undefined): number {
  return weights && weights.dtype !== 'float32' ? 2 : 4;
}
