// The keys of each config kind that change memory by more than 10 % and that the estimate does not
// model yet (issue 36): each one set is named on the estimate's line, so a QLoRA run is never shown
// as a confident "does not fit". The estimate models full fine-tuning with the precision's weights
// and AdamW's two fp32 states, every sequence at its full length.
import type { NotModelled } from '../memory-input';
import { ACCELERATE_KEYS } from './accelerate-keys';
import { DEEPSPEED_KEYS } from './deepspeed-keys';
import { HF_TRAINING_KEYS } from './hf-training-keys';
import { withNamedByTable } from './key-effects';
import { TORCHTITAN_KEYS } from './torchtitan-keys';

/** A value of the config by its path (undefined where absent), as FieldReader.get reads it. */
export type ConfigValue = (path: (string | number)[]) => unknown;

/** AdamW variants that keep two fp32 states per parameter, as the estimate does. */
const MODELLED_OPTIMIZERS = new Set([
  'adamw_torch',
  'adamw_torch_fused',
  'adamw_torch_xla',
  'adamw_torch_npu_fused',
  'adamw_anyprecision',
  'stable_adamw',
]);

/** Optimizers that keep less than AdamW's 8 bytes per parameter on the GPU (quantised, paged, one state, none, or low rank). */
const SMALLER_OPTIMIZER = /8bit|4bit|paged|adafactor|sgd|lion|rmsprop|adagrad|galore|apollo|lomo/;

/**
 * A TrainingArguments / TRL config's keys set that the estimate does not model, with what they do in
 * the person's words. `modelled` says what the estimate models for this input (./peft-settings.ts):
 * LoRA and bitsandbytes' weights where the replay runs them (one process, DDP; LoRA alone under FSDP2), the weights' dtype
 * for PyTorch; what it does not stays named.
 */
export function hfNotModelled(
  get: ConfigValue,
  modelled: { lora: boolean; dtype: boolean } = { lora: false, dtype: false },
): NotModelled[] {
  const on = (key: string) => get([key]) === true || get([key]) === 'true';
  const out: NotModelled[] = [];
  // TRL's ModelConfig: LoRA adapters train, the base weights are frozen (no gradients, no optimizer states).
  if (!modelled.lora) {
    if (on('use_peft')) out.push({ key: 'use_peft: true', what: 'LoRA', effect: 'lowers' });
    if (on('load_in_4bit')) out.push({ key: 'load_in_4bit: true', what: '4-bit', effect: 'lowers' });
    else if (on('load_in_8bit')) out.push({ key: 'load_in_8bit: true', what: '8-bit', effect: 'lowers' });
  }
  // DoRA adds a magnitude vector per output and a weight-norm computation per adapted linear.
  if (on('use_peft') && on('use_dora')) out.push({ key: 'use_dora: true', what: 'DoRA', effect: 'either' });
  // The weights' dtype the trainer loads, where the estimate does not model it (DeepSpeed keeps fp32 masters its own way).
  const dtype = modelled.dtype ? undefined : weightsDtype(get);
  if (dtype) out.push({ key: dtype.key, what: `${dtype.value} weights`, effect: 'lowers' });
  const optim = get(['optim']);
  if (typeof optim === 'string' && !MODELLED_OPTIMIZERS.has(optim))
    out.push({
      key: `optim: ${optim}`,
      what: optim,
      // ademamix keeps three states, schedule-free and grokadamw their own: more or less than AdamW's two.
      effect: SMALLER_OPTIMIZER.test(optim) ? 'lowers' : 'either',
    });
  // Liger's fused linear cross-entropy never holds the logits, the largest activation of a big vocabulary.
  if (on('use_liger_kernel')) out.push({ key: 'use_liger_kernel: true', what: 'Liger kernels', effect: 'lowers' });
  if (on('activation_offloading'))
    out.push({ key: 'activation_offloading: true', what: 'activation offloading', effect: 'lowers' });
  // Inductor's fusions keep fewer activations; its CUDA graphs (mode reduce-overhead) keep pools of their own.
  const backend = get(['torch_compile_backend']);
  if (on('torch_compile')) out.push({ key: 'torch_compile: true', what: 'torch.compile', effect: 'either' });
  else if (typeof backend === 'string')
    out.push({ key: `torch_compile_backend: ${backend}`, what: 'torch.compile', effect: 'either' });
  // accelerate launch's FP8 (torchao, TransformerEngine, MS-AMP): FP8 weights and activations in the matmuls.
  if (get(['mixed_precision']) === 'fp8') out.push({ key: 'mixed_precision: fp8', what: 'FP8', effect: 'either' });
  // accelerate launch's autocast, where the Trainer's own bf16 / fp16 (the modelled keys) are not set.
  const mp = get(['mixed_precision']);
  if ((mp === 'bf16' || mp === 'fp16') && !on('bf16') && !on('fp16'))
    out.push({ key: `mixed_precision: ${mp}`, what: `${mp} autocast through accelerate launch`, effect: 'lowers' });
  // Evaluation runs without gradients, below the training step's peak at the same batch; a larger batch may not be.
  const evalBatch = Number(get(['per_device_eval_batch_size']));
  const trainBatch = Number(get(['per_device_train_batch_size']) ?? 8);
  if (Number.isFinite(evalBatch) && evalBatch > trainBatch)
    out.push({
      key: `per_device_eval_batch_size: ${evalBatch}`,
      what: 'an evaluation batch larger than the training one',
      effect: 'either',
    });
  // split_batches divides the batch over the processes: per_device_train_batch_size is then not the per-GPU batch.
  if (get(['accelerator_config', 'split_batches']) === true)
    out.push({ key: 'accelerator_config.split_batches: true', what: 'split batches', effect: 'lowers' });
  return withNamedByTable(out, HF_TRAINING_KEYS, get);
}

/** An accelerate config's: FP8 and torch.compile (dynamo_config, or the older top-level dynamo_backend). */
export function accelerateNotModelled(get: ConfigValue): NotModelled[] {
  const out: NotModelled[] = [];
  if (get(['mixed_precision']) === 'fp8') out.push({ key: 'mixed_precision: fp8', what: 'FP8', effect: 'either' });
  const backend = get(['dynamo_config', 'dynamo_backend']) ?? get(['dynamo_backend']);
  if (typeof backend === 'string' && backend.toUpperCase() !== 'NO')
    out.push({ key: `dynamo_backend: ${backend}`, what: 'torch.compile', effect: 'either' });
  return withNamedByTable(out, ACCELERATE_KEYS, get);
}

/** DeepSpeed's own optimizers and torch.optim's that keep AdamW's two fp32 states, as the estimate does (matched case-insensitively). */
const DEEPSPEED_MODELLED_OPTIMIZERS = new Set(['adam', 'adamw', 'fusedadam', 'cpuadam', 'lamb', 'fusedlamb']);

/** A DeepSpeed config's: other optimizers, activations offloaded by DeepSpeed's checkpointing, ZeRO++'s secondary partition, DeepCompile. */
export function deepspeedNotModelled(get: ConfigValue): NotModelled[] {
  const out: NotModelled[] = [];
  const optim = get(['optimizer', 'type']);
  if (typeof optim === 'string' && !DEEPSPEED_MODELLED_OPTIMIZERS.has(optim.toLowerCase()))
    out.push({
      key: `optimizer.type: ${optim}`,
      what: optim,
      // Adagrad and SGD keep one state or none; 1-bit Adam / LAMB add error-feedback buffers, Muon its own.
      effect: /^(adagrad|sgd|lion)$/i.test(optim) ? 'lowers' : 'either',
    });
  if (get(['activation_checkpointing', 'cpu_checkpointing']) === true)
    out.push({
      key: 'activation_checkpointing.cpu_checkpointing: true',
      what: 'activations on the CPU',
      effect: 'lowers',
    });
  // hpZ keeps a second copy of the parameters' shards per node group: more memory, not less.
  const hpz = get(['zero_optimization', 'zero_hpz_partition_size']);
  if (typeof hpz === 'number' && hpz > 1)
    out.push({ key: `zero_optimization.zero_hpz_partition_size: ${hpz}`, what: 'ZeRO++ hpZ', effect: 'either' });
  const compile = get(['compile']);
  const c = compile && typeof compile === 'object' ? (compile as Record<string, unknown>) : {};
  if (c.deepcompile === true) out.push({ key: 'compile.deepcompile: true', what: 'DeepCompile', effect: 'either' });
  else if (c.enabled === true) out.push({ key: 'compile.enabled: true', what: 'torch.compile', effect: 'either' });
  // ZeRO-3's memory-efficient linear (on by default) keeps no gathered weight for backward; off keeps it.
  if (get(['zero_optimization', 'memory_efficient_linear']) === false)
    out.push({
      key: 'zero_optimization.memory_efficient_linear: false',
      what: 'memory_efficient_linear off',
      effect: 'either',
    });
  return withNamedByTable(out, DEEPSPEED_KEYS, get);
}

/** A torchtitan job config's: converters other than float8 (estimated as bf16), and the keys ./torchtitan-keys.ts names. */
export function torchtitanNotModelled(get: ConfigValue): NotModelled[] {
  const out: NotModelled[] = [];
  const converters = get(['model', 'converters']);
  const others = Array.isArray(converters) ? converters.filter((c) => c !== 'float8') : [];
  if (others.length)
    out.push({
      key: `model.converters: ${others.join(', ')}`,
      what: `${others.join(', ')} converters`,
      effect: 'either',
    });
  return withNamedByTable(out, TORCHTITAN_KEYS, get);
}

/** bfloat16 / float16 weights, where TRL's `dtype` (or the older `torch_dtype`) or `model_init_kwargs.dtype` asks for them. */
function weightsDtype(get: ConfigValue): { key: string; value: string } | undefined {
  for (const path of [
    ['dtype'],
    ['torch_dtype'],
    ['model_init_kwargs', 'dtype'],
    ['model_init_kwargs', 'torch_dtype'],
  ]) {
    const v = get(path);
    if (v === 'bfloat16' || v === 'float16' || v === 'bf16' || v === 'fp16' || v === 'half')
      return { key: `${path.join('.')}: ${v}`, value: v === 'bfloat16' || v === 'bf16' ? 'bf16' : 'fp16' };
  }
  return undefined;
}
