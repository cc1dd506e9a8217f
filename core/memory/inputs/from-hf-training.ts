// Hugging Face TrainingArguments / TRL arguments as an estimate's input: the model from the
// `fsdp-studio:` comment or model_name_or_path (a preset, a config.json, the local Hugging Face
// cache), per_device_train_batch_size, max_length, bf16/fp16, activation checkpointing, and how the
// Trainer distributes: FSDP (1, or 2 with fsdp_config's version) through `fsdp` / `fsdp_config`, DeepSpeed through `deepspeed`, else DDP.
import path from 'node:path';
import { ZERO_STAGE_STRATEGY } from '../../config/run-config';
import type { SourceDocument } from '../../config/source-document';
import { findGpu } from '../gpu-presets';
import type { MemoryChange } from '../memory-change';
import {
  defaultMemoryInput,
  type Dtype,
  type LoraPlan,
  type MemoryInput,
  type NotModelled,
  type ShardingStrategy,
  type ZeroSettings,
  ZERO_DEFAULTS,
} from '../memory-input';
import { beginReading } from './config-fields';
import type { ConfigAssignment, ConfigInputResult } from './config-input';
import type { EstimateOptions } from './estimate-options';
import { deepspeedNotModelled, hfNotModelled } from './not-modelled';
import { blockModules, unmatchedTargets } from '../lora';
import { loraFromAdapterConfig, peftFromHf } from './peft-settings';
import type { ModelSource } from './model-from-options';

export function hfTrainingInput(
  doc: SourceDocument,
  fileName: string,
  options: EstimateOptions,
  source?: ModelSource,
): ConfigInputResult {
  const begun = beginReading(doc, fileName, 'hf-training', options, source);
  if ('error' in begun) return begun;
  const { f, model } = begun;
  const notes = f.notes;
  const micro = options.microBatch ?? f.integer(['per_device_train_batch_size'], 8, 1);
  const seqLen =
    options.seqLen ??
    (f.get(['max_length']) !== undefined ? f.integer(['max_length'], model.seqLen, 1) : Math.min(model.seqLen, 1024));
  if (options.seqLen === undefined && f.get(['max_length']) === undefined)
    notes.push(`sequence length ${seqLen} assumed (TRL's default max_length 1024, or the model's if shorter)`);
  const dtype: Dtype = f.boolean(['bf16'], false) ? 'bfloat16' : f.boolean(['fp16'], false) ? 'float16' : 'float32';
  const ac =
    f.boolean(['activation_checkpointing'], false) ||
    f.boolean(['gradient_checkpointing'], false) ||
    fsdpConfig(f.get(['fsdp_config']), 'activation_checkpointing') === true;
  const gas = f.integer(['gradient_accumulation_steps'], 1, 1);
  const machines = options.nnodes ?? f.integer(['num_machines'], 1, 1);
  const processes = options.nproc !== undefined ? options.nproc * machines : f.integer(['num_processes'], 1, 1);
  const gpu = options.gpu ? findGpu(options.gpu) : undefined;
  if (options.gpu && !gpu) return { kind: 'hf-training', error: `${fileName}: GPU "${options.gpu}" is not known` };

  let framework: MemoryInput['framework'] = 'pytorch';
  let strategy: ShardingStrategy = 'NO_SHARD';
  let offload = { optimizer: false, params: false };
  let fsdpVersion: 1 | 2 | undefined;
  let dsLeftOut: NotModelled[] = [];
  let zero: ZeroSettings | undefined;
  const fsdp = f.get(['fsdp']);
  const ds = f.get(['deepspeed']);
  if (fsdp !== undefined && fsdp !== null && fsdp !== false && fsdp !== '' && fsdp !== 'false') {
    const options_ = typeof fsdp === 'string' ? fsdp.split(/\s+/) : Array.isArray(fsdp) ? fsdp.map(String) : [];
    const reshard = fsdpConfig(f.get(['fsdp_config']), 'reshard_after_forward');
    strategy =
      options_.includes('shard_grad_op') || reshard === false || reshard === 'false'
        ? 'SHARD_GRAD_OP'
        : options_.includes('hybrid_shard')
          ? 'HYBRID_SHARD'
          : 'FULL_SHARD';
    // fsdp_config's version (or fsdp_version): 2 is fully_shard; the Trainer's default, through accelerate, is 1.
    const version = fsdpConfig(f.get(['fsdp_config']), 'version');
    fsdpVersion = version === 2 || version === '2' ? 2 : 1;
    const cpu = options_.includes('offload') || fsdpConfig(f.get(['fsdp_config']), 'cpu_offload') === true;
    offload = { optimizer: cpu, params: cpu };
  } else if (ds !== undefined && ds !== null && ds !== '') {
    framework = 'deepspeed';
    // The file the Trainer loads (from its launch folder; the config's own folder is the usual one,
    // as the hf.deepspeed rule reads it), or the mapping given inline.
    const file = typeof ds === 'string' ? path.resolve(path.dirname(fileName), ds) : undefined;
    const text = file ? source?.readFile?.(file) : undefined;
    const dsConfig: unknown = typeof ds === 'object' ? ds : text !== undefined ? parseJson(text) : undefined;
    const settings = zeroSettings(dsConfig);
    // What the DeepSpeed file sets and the estimate leaves out is named as the file's own estimate names it.
    dsLeftOut = deepspeedNotModelled((p) => valueAt(dsConfig, p)).map((n) => ({
      ...n,
      key: `${n.key} (in ${typeof ds === 'string' ? ds : 'deepspeed'})`,
    }));
    const stage =
      settings?.stage ?? (/zero_?3|stage_?3|z3/i.test(String(ds)) ? 3 : /zero_?1|stage_?1/i.test(String(ds)) ? 1 : 2);
    strategy = ZERO_STAGE_STRATEGY[stage];
    if (settings) offload = settings.offload;
    zero = zeroBuffers(dsConfig, model.shape.dModel);
    if (typeof ds === 'string')
      notes.push(
        settings
          ? `DeepSpeed ZeRO stage ${stage}${settings.offload.optimizer || settings.offload.params ? `, offload of ${[settings.offload.optimizer ? 'optimizer' : '', settings.offload.params ? 'parameters' : ''].filter(Boolean).join(' and ')}` : ''} from ${ds}`
          : `DeepSpeed ZeRO stage ${stage} guessed from the name ${ds}: ${text === undefined ? 'the file is not readable here' : 'the file does not say its stage as a number'}`,
      );
  }
  if (f.error) return { kind: 'hf-training', ...f.error };
  const chosenFramework = options.framework ?? framework;
  const peft = peftFromHf((path) => f.get(path));
  // A PEFT adapter_config.json inside the model's folder or beside this config: the adapter trained on
  // (the HF Trainer over a PeftModel), where the config does not make one itself (use_peft).
  const adapter = peft.lora ? undefined : adapterConfig([model.source?.from, fileName], source);
  if (adapter && typeof adapter.lora === 'string') notes.push(`${adapter.file}: ${adapter.lora}; LoRA left out`);
  else if (adapter && typeof adapter.lora !== 'string') {
    peft.lora = { ...adapter.lora, adapterDtype: peft.weights?.quant ? 'bfloat16' : 'float32' };
    peft.keys.lora = adapter.file;
  }
  // The replay runs LoRA and bitsandbytes' weights in one process or under DDP, and LoRA over an
  // unquantised base under FSDP2 (fully_shard per block and at the root, as accelerate's FSDP2 plugin
  // wraps a PEFT model; measured: bench:memory-lora -- --world 2 --fsdp). FSDP1, ZeRO or FSDP over a
  // quantised base, modules_to_save under FSDP, and MoE blocks keep the full fine-tuning estimate with LoRA named.
  const fsdp2Lora =
    strategy !== 'NO_SHARD' &&
    framework === 'pytorch' &&
    fsdpVersion === 2 &&
    !peft.weights?.quant &&
    !peft.lora?.modulesToSave.length;
  // ZeRO (0–3) over an unquantised LoRA model: frameworks/deepspeed.ts holds the frozen base and the trainable
  // adapters as DeepSpeed's stages do (held to DeepSpeed on the CPU: npm run bench:memory-lora-zero).
  const zeroLora = chosenFramework === 'deepspeed' && framework === 'deepspeed' && !peft.weights?.quant;
  const loraModelled =
    !!peft.lora &&
    ((chosenFramework === 'pytorch' && (strategy === 'NO_SHARD' || fsdp2Lora)) || zeroLora) &&
    !!blockModules(model.shape);
  const dtypeModelled = chosenFramework === 'pytorch';
  if (peft.lora && loraModelled) {
    const q = peft.weights?.quant;
    notes.push(
      `LoRA${peft.keys.lora === 'use_peft: true' ? '' : ` from ${peft.keys.lora}`} r ${peft.lora.r} on ${peft.lora.targets === 'all-linear' ? 'every linear but the output head' : peft.lora.targets.length ? peft.lora.targets.join(', ') : "PEFT's default targets (q and v)"}` +
        `${peft.lora.modulesToSave.length ? `, ${peft.lora.modulesToSave.join(', ')} trained whole` : ''}; base weights frozen in ${q ? `${q.kind === 'int8' ? 'int8' : q.kind.toUpperCase()}${q.doubleQuant ? ' with nested quantisation' : ''} (the rest in ${peft.weights!.dtype}), adapters in ${peft.lora.adapterDtype}` : zeroLora ? `${dtype}, adapters too (DeepSpeed's engine casts every parameter)` : `${peft.weights?.dtype ?? 'float32'}, adapters in ${peft.lora.adapterDtype}`}`,
    );
    const unmatched = unmatchedTargets(model.shape, peft.lora);
    if (unmatched.length) notes.push(`LoRA targets ${unmatched.join(', ')} match no linear of ${model.shape.name}`);
  } else if (peft.weights && peft.weights.dtype !== 'float32' && !peft.lora && dtypeModelled)
    notes.push(`weights, gradients and AdamW states in ${peft.weights.dtype} (${peft.keys.dtype})`);
  const notModelled = [
    ...hfNotModelled((path) => f.get(path), { lora: loraModelled, dtype: dtypeModelled }),
    ...(adapter && peft.lora && !loraModelled
      ? [{ key: `adapter_config.json (${adapter.file})`, what: 'LoRA', effect: 'lowers' as const }]
      : []),
    ...dsLeftOut,
  ];
  const input: MemoryInput = {
    ...defaultMemoryInput(model.shape, seqLen),
    framework: chosenFramework,
    microBatch: micro,
    gradAccumSteps: gas,
    strategy,
    nprocPerNode: Math.max(1, Math.round(processes / machines)),
    nnodes: machines,
    precision: { param: dtype, reduce: dtype === 'float32' ? 'float32' : dtype, activation: dtype },
    checkpointing: { policy: options.checkpointing ?? (ac ? 'every_n' : 'none'), everyN: options.everyN ?? 1 },
    offload,
    // transformers' default (sdpa) and flash_attention_2 keep no seq × seq scores; eager keeps them.
    attention:
      options.attention ??
      (f.get(['attn_implementation']) === 'eager' || f.get(['model_init_kwargs', 'attn_implementation']) === 'eager'
        ? 'eager'
        : 'flash'),
    ...(fsdpVersion ? { fsdp: { ...defaultMemoryInput(model.shape, seqLen).fsdp, version: fsdpVersion } } : {}),
    ...(zero ? { zero } : {}),
    ...(gpu ? { gpu } : {}),
    ...(notModelled.length ? { notModelled } : {}),
    // bitsandbytes' weights only with LoRA replayed (a quantised model trains adapters only).
    ...(peft.weights && dtypeModelled && (loraModelled || peft.weights.dtype !== 'float32')
      ? { weights: loraModelled ? peft.weights : { dtype: peft.weights.dtype } }
      : {}),
    ...(loraModelled ? { lora: peft.lora } : {}),
  };
  const anchorPath = doc.has(['per_device_train_batch_size']) ? ['per_device_train_batch_size'] : [];
  return {
    kind: 'hf-training',
    doc,
    input,
    ...(model.source ? { model: model.source } : {}),
    anchor: doc.rangeOf(anchorPath, 'key'),
    fitAnchor: doc.rangeOf(anchorPath, anchorPath.length ? 'value' : 'key'),
    notes,
    assignmentsFor: (change) => hfAssignments(input, change),
  };
}

/**
 * The first readable adapter_config.json in the folder of each of `places` (the model's config.json,
 * the training config), with its LoRA or why it is not one.
 */
function adapterConfig(
  places: Array<string | undefined>,
  source: ModelSource | undefined,
): { file: string; lora: LoraPlan | string } | undefined {
  for (const place of places) {
    if (!place || !path.isAbsolute(place)) continue;
    const file = path.join(path.dirname(place), 'adapter_config.json');
    const text = source?.readFile?.(file);
    if (text === undefined) continue;
    const json = parseJson(text);
    return { file, lora: json === undefined ? 'not valid JSON' : loraFromAdapterConfig(json) };
  }
  return undefined;
}

/** ZeRO stage (0 when the config has no zero_optimization, as DeepSpeed reads it) and offloads, or undefined when the stage is not a number 0–3 ("auto"). */
function zeroSettings(
  config: unknown,
): { stage: 0 | 1 | 2 | 3; offload: { optimizer: boolean; params: boolean } } | undefined {
  if (!config || typeof config !== 'object' || Array.isArray(config)) return undefined;
  const zero = (config as { zero_optimization?: unknown }).zero_optimization;
  const z = zero && typeof zero === 'object' ? (zero as Record<string, unknown>) : {};
  const stage = z.stage === undefined ? 0 : z.stage;
  if (stage !== 0 && stage !== 1 && stage !== 2 && stage !== 3) return undefined;
  const device = (key: string) => {
    const o = z[key];
    const d = o && typeof o === 'object' ? (o as { device?: unknown }).device : undefined;
    return d === 'cpu' || d === 'nvme';
  };
  return { stage, offload: { optimizer: device('offload_optimizer'), params: stage === 3 && device('offload_param') } };
}

/**
 * The DeepSpeed file's bucket sizes as the Trainer hands them to DeepSpeed: numbers as given, DeepSpeed's
 * defaults where absent, and "auto" filled from the model's width as transformers' HfTrainerDeepSpeedConfig
 * does (reduce_bucket_size d², stage3_prefetch_bucket_size 0.9 d², stage3_param_persistence_threshold 10 d).
 */
function zeroBuffers(config: unknown, d: number): ZeroSettings {
  const z = valueAt(config, ['zero_optimization']);
  const get = (key: string) => (z && typeof z === 'object' ? (z as Record<string, unknown>)[key] : undefined);
  const size = (keys: string[], auto: number, fallback: number) => {
    for (const key of keys) {
      const v = get(key);
      if (v === 'auto') return auto;
      if (typeof v === 'number' && v > 0) return v;
    }
    return fallback;
  };
  const flag = (key: string, fallback: boolean | undefined) => {
    const v = get(key);
    return typeof v === 'boolean' ? v : fallback;
  };
  const overlapComm = flag('overlap_comm', ZERO_DEFAULTS.overlapComm);
  return {
    reduceBucketSize: size(['reduce_bucket_size'], d * d, ZERO_DEFAULTS.reduceBucketSize),
    allgatherBucketSize: size(
      ['allgather_bucket_size'],
      ZERO_DEFAULTS.allgatherBucketSize,
      ZERO_DEFAULTS.allgatherBucketSize,
    ),
    prefetchBucketSize: size(
      ['stage3_prefetch_bucket_size', 'prefetch_bucket_size'],
      Math.floor(0.9 * d * d),
      ZERO_DEFAULTS.prefetchBucketSize,
    ),
    maxLiveParameters: size(
      ['stage3_max_live_parameters', 'max_live_parameters'],
      ZERO_DEFAULTS.maxLiveParameters,
      ZERO_DEFAULTS.maxLiveParameters,
    ),
    paramPersistenceThreshold: size(
      ['stage3_param_persistence_threshold', 'param_persistence_threshold'],
      10 * d,
      ZERO_DEFAULTS.paramPersistenceThreshold,
    ),
    contiguousGradients: flag('contiguous_gradients', ZERO_DEFAULTS.contiguousGradients)!,
    ...(overlapComm !== undefined ? { overlapComm } : {}),
  };
}

function valueAt(config: unknown, path: (string | number)[]): unknown {
  let v = config;
  for (const k of path)
    v = v !== null && typeof v === 'object' ? (v as Record<string | number, unknown>)[k] : undefined;
  return v;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function fsdpConfig(config: unknown, key: string): unknown {
  if (!config || typeof config !== 'object') return undefined;
  const c = config as Record<string, unknown>;
  return c[key] ?? c[`fsdp_${key}`];
}

function hfAssignments(input: MemoryInput, change: MemoryChange): ConfigAssignment[] | string {
  switch (change.knob) {
    case 'microBatch':
      return [{ path: ['per_device_train_batch_size'], value: change.value }];
    case 'checkpointing':
      if (change.value.policy === 'selective' || change.value.everyN > 1)
        return 'TrainingArguments checkpoints every layer or none';
      return [{ path: ['activation_checkpointing'], value: change.value.policy !== 'none' }];
    case 'precision':
      return [{ path: ['bf16'], value: change.value === 'bfloat16' }];
    case 'strategy':
      if (input.framework === 'deepspeed') return 'the ZeRO stage is set in the DeepSpeed file';
      if (change.value === 'NO_SHARD') return [{ path: ['fsdp'], value: undefined }];
      if (change.value === 'FULL_SHARD' || change.value === 'SHARD_GRAD_OP')
        return [
          { path: ['fsdp'], value: true },
          { path: ['fsdp_config', 'reshard_after_forward'], value: change.value === 'FULL_SHARD' },
        ];
      return `FSDP2 through TrainingArguments has no ${change.value}`;
    case 'offload':
      return input.framework === 'deepspeed'
        ? 'offload is set in the DeepSpeed file'
        : [{ path: ['fsdp_config', 'cpu_offload'], value: change.value }];
    case 'nproc':
      return [{ path: ['num_processes'], value: change.value * input.nnodes }];
    case 'parallel':
      return 'tensor, context, pipeline and expert parallel degrees are set in a torchtitan job config';
    case 'gpu':
      return [{ option: 'gpu', value: change.value }];
  }
}
