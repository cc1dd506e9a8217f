// How many ranks a DeepSpeed or accelerate config implies, read from its own keys: DeepSpeed's batch
// identity train_batch_size = train_micro_batch_size_per_gpu × gradient_accumulation_steps × world
// size (DeepSpeed asserts it at start-up), accelerate's num_processes (the total across machines).
// A launch compares it with the ranks its command starts (runs/launch/launch-world.ts).
import type { ConfigKind } from './document-kind';
import { parseSourceDocument, sourceKindOf } from './source-document';

export interface ConfigWorldSize {
  size: number;
  /** How the config implies it: "train_batch_size 64 ÷ (micro-batch 4 × accumulation 4)". */
  why: string;
}

/** The world size the config implies, or undefined when its keys do not say (absent, "auto", not a whole division). */
export function configWorldSize(kind: ConfigKind, text: string, fileName: string): ConfigWorldSize | undefined {
  const doc = parseSourceDocument(text, sourceKindOf(fileName));
  if (doc.syntaxErrors.some((e) => (e.severity ?? 'error') === 'error')) return undefined;
  const value = doc.value;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const get = (key: string): unknown => (value as Record<string, unknown>)[key];
  const positive = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v > 0;
  if (kind === 'deepspeed') {
    const total = get('train_batch_size');
    const micro = get('train_micro_batch_size_per_gpu');
    const accumulation = get('gradient_accumulation_steps') ?? 1;
    if (!positive(total) || !positive(micro) || !positive(accumulation) || total % (micro * accumulation) !== 0)
      return undefined;
    return {
      size: total / (micro * accumulation),
      why: `train_batch_size ${total} ÷ (micro-batch ${micro} × accumulation ${accumulation})`,
    };
  }
  if (kind === 'accelerate') {
    const processes = get('num_processes');
    if (!positive(processes)) return undefined;
    const machines = get('num_machines');
    return {
      size: processes,
      why: `num_processes ${processes}${positive(machines) && machines > 1 ? ` (across ${machines} machines)` : ''}`,
    };
  }
  return undefined;
}
