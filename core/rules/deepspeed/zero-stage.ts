// The ZeRO stage a DeepSpeed config runs with, as DeepSpeed reads it (zero/config.py
// get_zero_config): no section is stage 0, the old boolean form `true` is stage 1.
import { isObject } from '../rule';

/** The stage, 'auto' when Hugging Face fills it in, undefined when the value is not a stage. */
export function zeroStage(config: Record<string, unknown>): number | 'auto' | undefined {
  const zero = config.zero_optimization;
  if (zero === undefined || zero === null) return 0;
  if (typeof zero === 'boolean') return zero ? 1 : 0;
  if (!isObject(zero)) return undefined;
  const stage = zero.stage ?? 0;
  if (stage === 'auto') return 'auto';
  return typeof stage === 'number' && [0, 1, 2, 3].includes(stage) ? stage : undefined;
}

/** Whether `section.enabled` is true (fp16, bf16, amp); "auto" counts as not known to be on. */
export function enabled(section: unknown): boolean {
  return isObject(section) && section.enabled === true;
}

/** The bf16 section under its current name or the old one DeepSpeed still reads (precision_config.py get_bfloat16_config). */
export function bf16Path(config: Record<string, unknown>): 'bf16' | 'bfloat16' {
  return config.bf16 === undefined && config.bfloat16 !== undefined ? 'bfloat16' : 'bf16';
}
