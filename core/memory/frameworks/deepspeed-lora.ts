// What DeepSpeed ZeRO holds for a PEFT LoRA model beyond the base model (./deepspeed.ts, issue 36): the
// trainable tensors ZeRO partitions and steps, and the PEFT model's activations as the PyTorch replay
// makes them (DeepSpeed runs the module itself; ZeRO changes where parameters live, not what autograd
// saves). ZeRO's hooks make the reduce buckets at the first trainable gradient, which for LoRA comes in
// the last block's backward, after the loss and the frozen head: the activations are split there.
import { adaptedModules, blockModules } from '../lora';
import type { MemoryInput } from '../memory-input';
import { replayTraining, type ReplayPhase, type ReplaySink, type ReplayTerm } from './pytorch-replay';

/** A LoRA model's trainable tensors (elements each, adapters block by block then modules_to_save's copies). */
export interface ZeroLora {
  tensors: number[];
  /** Adapter elements of one block. */
  perBlock: number;
  trainable: number;
}

/** The trainable tensors of `input`'s LoRA, or undefined without LoRA (or for blocks ../lora.ts does not list). */
export function zeroLora(input: MemoryInput): ZeroLora | undefined {
  if (!input.lora || !blockModules(input.model)) return undefined;
  const m = input.model;
  const r = input.lora.r;
  const block = adaptedModules(m, input.lora).flatMap((mod) => [r * mod.in, mod.out * r]);
  const tensors: number[] = [];
  for (let i = 0; i < m.nLayers; i++) tensors.push(...block);
  // modules_to_save: a trainable copy of the embedding or of the output head beside the frozen original.
  const saved = new Set(input.lora.modulesToSave.map((n) => n.split('.').pop()));
  for (const names of [
    ['embed_tokens', 'wte', 'embed_in'],
    ['lm_head', 'embed_out'],
  ])
    if (names.some((n) => saved.has(n))) tensors.push(m.vocabSize * m.dModel);
  return {
    tensors,
    perBlock: block.reduce((a, n) => a + n, 0),
    trainable: tensors.reduce((a, n) => a + n, 0),
  };
}

/** Activation bytes of the PEFT model at its highest: in forward, in backward before the first trainable gradient, and after it. */
export interface LoraActivations {
  forward: number;
  beforeFirstGrad: number;
  afterFirstGrad: number;
}

const ACTIVATION_TERMS: ReadonlySet<ReplayTerm> = new Set(['saved', 'recompute', 'actGrads', 'logits', 'autocast']);
const STEPS = 3;

/**
 * The replay of one process training the PEFT model in the engine's dtype (every parameter cast to it, as
 * DeepSpeed's engine does), read for its activations in the last step replayed.
 */
export function loraActivations(input: MemoryInput): LoraActivations {
  const dtype = input.precision.param;
  const { weights: _loaded, ...rest } = input;
  const sink = new ActivationSink();
  replayTraining(
    {
      ...rest,
      framework: 'pytorch',
      strategy: 'NO_SHARD',
      nprocPerNode: 1,
      nnodes: 1,
      device: 'cpu',
      offload: { optimizer: false, params: false },
      precision: { param: dtype, reduce: dtype, activation: dtype },
      ...(dtype !== 'float32' ? { weights: { dtype } } : {}),
      lora: { ...input.lora!, adapterDtype: dtype },
    },
    sink,
    STEPS,
  );
  return sink.peaks;
}

class ActivationSink implements ReplaySink {
  peaks: LoraActivations = { forward: 0, beforeFirstGrad: 0, afterFirstGrad: 0 };
  private readonly live = new Map<number, number>();
  private bytes = 0;
  private step = 0;
  private phaseNow: ReplayPhase = 'setup';
  private gradSeen = false;

  alloc(id: number, bytes: number, term: ReplayTerm, _stream: number, host: boolean): void {
    if (this.phaseNow === 'backward' && term === 'grads') this.gradSeen = true;
    if (host || !ACTIVATION_TERMS.has(term)) return;
    this.live.set(id, bytes);
    this.bytes += bytes;
    this.note();
  }

  free(id: number): void {
    const bytes = this.live.get(id);
    if (bytes === undefined) return;
    this.live.delete(id);
    this.bytes -= bytes;
  }

  phase(step: number, phase: ReplayPhase): void {
    this.step = step;
    this.phaseNow = phase;
    if (phase === 'backward') this.gradSeen = false;
    this.note();
  }

  /** Only the last step counts: the earlier ones make what later steps find in place. */
  private note(): void {
    if (this.step !== STEPS) return;
    const p = this.peaks;
    if (this.phaseNow === 'forward') p.forward = Math.max(p.forward, this.bytes);
    else if (this.phaseNow === 'backward') {
      if (this.gradSeen) p.afterFirstGrad = Math.max(p.afterFirstGrad, this.bytes);
      else p.beforeFirstGrad = Math.max(p.beforeFirstGrad, this.bytes);
    }
  }
}
