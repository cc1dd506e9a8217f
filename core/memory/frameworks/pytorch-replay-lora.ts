// What a PEFT LoRA model (one process, DDP or FSDP2) holds, for the PyTorch replay (./pytorch-replay.ts):
// the frozen base as loaded — bitsandbytes' quantised linears or the loading dtype — the adapters and
// modules_to_save's trainable copies in the optimizer's order, and the per-block description the
// block replay (./pytorch-block.ts) runs the adapters' paths from. The sizes are ../lora.ts's.
import { bytesOf, type MemoryInput } from '../memory-input';
import { adaptedModules, blockModules, quantizedTensors, type BlockModule } from '../lora';
import type { ParameterTensors } from '../model-shape';
import type { BlockLora, LinearName } from './pytorch-block';

/** Where a holding's tensors go: the replay's allocation of `bytes` as parameters. */
type AllocParams = (bytes: number) => number;

/** Roles in the order a block runs them, for the adapters' place in parameter order. */
const LORA_ROLES: LinearName[] = ['qkv', 'proj', 'fc', 'gate', 'up', 'down'];

/**
 * The LoRA holdings of `input`, or undefined when the replay trains the whole model: no LoRA, an
 * architecture whose linears ../lora.ts does not list, or FSDP over a quantised base or with
 * modules_to_save (there the estimate stays full fine-tuning and the reader names LoRA as not modelled).
 */
export function loraHoldings(
  input: MemoryInput,
  t: ParameterTensors,
  wb: number,
  fsdp: boolean,
): LoraHoldings | undefined {
  const modules = blockModules(input.model);
  if (!input.lora || !modules) return undefined;
  if (fsdp && (input.weights?.quant || input.lora.modulesToSave.length)) return undefined;
  return new LoraHoldings(input, t, wb, modules);
}

export class LoraHoldings {
  readonly adapted: BlockModule[];
  /** Bytes per element of the adapter weights (and their gradients and AdamW states). */
  readonly adapterBytes: number;
  /** modules_to_save: trainable copies of the token embedding and of the output head. */
  readonly embedTrainable: boolean;
  readonly headTrainable: boolean;
  /** What the block replay needs: adapters by role, r, dropout, the dequantised weight per role. */
  readonly block: BlockLora;
  /** The trainable tensors in the optimizer's order, elements and bytes per element (after `parameters`). */
  readonly trainable: Array<{ numel: number; bytes: number }> = [];
  private readonly r: number;

  constructor(
    private readonly input: MemoryInput,
    private readonly t: ParameterTensors,
    /** Bytes per element of the loaded weights. */
    private readonly wb: number,
    private readonly modules: BlockModule[],
  ) {
    const lora = input.lora!;
    this.r = lora.r;
    this.adapted = adaptedModules(input.model, lora);
    this.adapterBytes = bytesOf(lora.adapterDtype);
    const saved = new Set(lora.modulesToSave.map((n) => n.split('.').pop()));
    this.embedTrainable = saved.has('embed_tokens') || saved.has('wte') || saved.has('embed_in');
    this.headTrainable = saved.has('lm_head') || saved.has('embed_out');
    const byRole: BlockLora['adapted'] = {};
    for (const mod of this.adapted) (byRole[mod.role] ??= []).push({ in: mod.in, out: mod.out });
    const quant = input.weights?.quant;
    const dequant: BlockLora['dequant'] = {};
    if (quant)
      for (const mod of modules) {
        const bytes = mod.in * mod.out * bytesOf(quant.computeDtype);
        dequant[mod.role] = Math.max(dequant[mod.role] ?? 0, bytes);
      }
    this.block = { adapted: byRole, r: lora.r, dropout: lora.dropout > 0, adapterBytes: this.adapterBytes, dequant };
  }

  /** bitsandbytes' linears are no autocast ops: they dequantise their weight (BlockLora.dequant) instead. */
  get quantised(): boolean {
    return !!this.input.weights?.quant;
  }

  /**
   * A frozen block as loaded: its norms in the loading dtype, then each linear's weight — bitsandbytes'
   * tensors (../lora.ts quantizedTensors) when quantised, else in the loading dtype — and biases.
   */
  frozenBlock(alloc: AllocParams): number[] {
    const m = this.input.model;
    const normTensors = (m.norm === 'layernorm' ? 2 : 1) * (m.normsPerBlock ?? 2);
    const ids = this.t.block.slice(0, normTensors).map((n) => alloc(n * this.wb));
    const quant = this.input.weights?.quant;
    for (const mod of this.modules) {
      const numel = mod.in * mod.out;
      const parts = quant ? quantizedTensors(numel, mod.out, quant.kind, quant.doubleQuant) : [numel * this.wb];
      for (const bytes of parts) ids.push(alloc(bytes));
    }
    for (const l of this.t.blockLinears) if (l.bias) ids.push(alloc(l.bias * this.wb));
    return ids;
  }

  /**
   * get_peft_model: each adapted module's lora_A (r × in) and lora_B (out × r), block by block, then
   * modules_to_save's trainable copies (in the loading dtype). They are what the optimizer steps.
   */
  parameters(alloc: AllocParams): void {
    const m = this.input.model;
    if (this.embedTrainable) this.trainable.push({ numel: m.vocabSize * m.dModel, bytes: this.wb });
    for (let i = 0; i < m.nLayers; i++)
      for (const mod of this.adapted)
        for (const numel of [this.r * mod.in, mod.out * this.r])
          this.trainable.push({ numel, bytes: this.adapterBytes });
    if (this.headTrainable) this.trainable.push({ numel: m.vocabSize * m.dModel, bytes: this.wb });
    for (const x of this.trainable) alloc(x.numel * x.bytes);
  }

  /** Elements of one block's adapters in parameter order (lora_A, lora_B per adapted module): FSDP2 shards them with the block. */
  blockAdapters(): number[] {
    return this.adapted.flatMap((mod) => [this.r * mod.in, mod.out * this.r]);
  }

  /** Bytes of every trainable tensor: what DDP's buckets hold once more. */
  trainableBytes(): number {
    return this.trainable.reduce((s, x) => s + x.numel * x.bytes, 0);
  }

  /**
   * Adapter `which` of the `index`-th adapted module of `linear`: its elements, and its gradient's key
   * ("lora<n>", n in parameter order within the block: ../pytorch-replay.ts gradOrder).
   */
  adapter(linear: LinearName, index: number, which: 'A' | 'B'): { key: string; numel: number } {
    const mod = this.adapted.filter((a) => a.role === linear)[index];
    const numel = which === 'A' ? this.r * mod.in : mod.out * this.r;
    return { key: `lora${LORA_ROLES.indexOf(linear) * 8 + index * 2 + (which === 'A' ? 0 : 1)}`, numel };
  }

  /** Whether the LM head makes a weight gradient: a trainable copy of it, or of the embedding tied to it. */
  headTrains(tied: boolean): boolean {
    return this.headTrainable || (tied && this.embedTrainable);
  }
}
