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

/**
 * What DeepSpeed does not do with the offload devices asked for at a ZeRO stage
 * (deepspeed/runtime/zero/config.py): parameter offload only at stage 3; optimizer offload not
 * without ZeRO, and to NVMe only at stage 3. One answer for a ds_config's blocks and accelerate's
 * deepspeed_config devices alike; 'none' or an absent device asks for nothing.
 */
export function unusedOffloads(
  stage: number,
  paramDevice: unknown,
  optimizerDevice: unknown,
): { param: boolean; optimizer?: 'without-zero' | 'nvme-below-stage-3' } {
  const asks = (device: unknown) => typeof device === 'string' && device !== 'none';
  const optimizer =
    stage === 0 && asks(optimizerDevice)
      ? 'without-zero'
      : stage < 3 && optimizerDevice === 'nvme'
        ? 'nvme-below-stage-3'
        : undefined;
  return { param: stage < 3 && asks(paramDevice), ...(optimizer ? { optimizer } : {}) };
}
