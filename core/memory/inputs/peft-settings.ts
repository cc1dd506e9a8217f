// LoRA, bitsandbytes quantisation and the weights' dtype as a TRL / TrainingArguments config states
// them (TRL's ModelConfig and SFTConfig; issue 36), or as a PEFT adapter_config.json does. TRL's own
// defaults apply to what a config leaves out: the model loaded in float32 (ModelConfig.dtype),
// lora_r 16, lora_alpha 32, lora_dropout 0.05, PEFT's per-family targets (q and v), NF4 without
// nested quantisation, and for a quantised model adapters cast to bf16 (SFTTrainer after
// get_peft_model; fp32 otherwise: PEFT's autocast_adapter_dtype).
import type { Dtype, LoraPlan, QuantKind, WeightStorage } from '../memory-input';
import type { ConfigValue } from './not-modelled';

export interface PeftSettings {
  /** How the weights are loaded; undefined: float32 and unquantised, as the estimate assumes anyway. */
  weights?: WeightStorage;
  /** use_peft: the adapters; undefined without LoRA. */
  lora?: LoraPlan;
  /** Where each setting came from, in the config's own words. */
  keys: { lora?: string; quant?: string; dtype?: string };
}

/** The weights' dtype a config names, from the keys TRL reads (model_init_kwargs over ModelConfig's dtype). */
export function configDtype(get: ConfigValue): { dtype: Dtype; key: string } | undefined {
  for (const path of [
    ['model_init_kwargs', 'dtype'],
    ['model_init_kwargs', 'torch_dtype'],
    ['dtype'],
    ['torch_dtype'],
  ]) {
    const dtype = dtypeOf(get(path));
    if (dtype) return { dtype, key: `${path.join('.')}: ${String(get(path))}` };
  }
  return undefined;
}

export function dtypeOf(v: unknown): Dtype | undefined {
  if (v === 'bfloat16' || v === 'bf16' || v === 'torch.bfloat16') return 'bfloat16';
  if (v === 'float16' || v === 'fp16' || v === 'half' || v === 'torch.float16') return 'float16';
  if (v === 'float32' || v === 'fp32' || v === 'float' || v === 'torch.float32') return 'float32';
  return undefined;
}

const on = (v: unknown) => v === true || v === 'true';

/** LoRA and quantisation from a TRL / TrainingArguments config's keys. */
export function peftFromHf(get: ConfigValue): PeftSettings {
  const named = configDtype(get);
  const dtype: Dtype = named?.dtype ?? 'float32';
  const keys: PeftSettings['keys'] = {};
  if (named && named.dtype !== 'float32') keys.dtype = named.key;
  let quant: WeightStorage['quant'];
  if (on(get(['load_in_4bit']))) {
    const type = get(['bnb_4bit_quant_type']);
    const kind: QuantKind = type === 'fp4' ? 'fp4' : 'nf4';
    quant = {
      kind,
      doubleQuant: on(get(['use_bnb_nested_quant'])) || on(get(['bnb_4bit_use_double_quant'])),
      // TRL passes the model's dtype as the compute dtype; a config may set its own.
      computeDtype: dtypeOf(get(['bnb_4bit_compute_dtype'])) ?? dtype,
    };
    keys.quant = 'load_in_4bit: true';
  } else if (on(get(['load_in_8bit']))) {
    quant = { kind: 'int8', doubleQuant: false, computeDtype: dtype };
    keys.quant = 'load_in_8bit: true';
  }
  const weights: WeightStorage | undefined =
    dtype !== 'float32' || quant ? { dtype, ...(quant ? { quant } : {}) } : undefined;
  if (!on(get(['use_peft']))) return { ...(weights ? { weights } : {}), keys };
  keys.lora = 'use_peft: true';
  const lora: LoraPlan = {
    r: positive(get(['lora_r'])) ?? 16,
    alpha: positive(get(['lora_alpha'])) ?? 32,
    dropout: fraction(get(['lora_dropout'])) ?? 0.05,
    targets: targetsOf(get(['lora_target_modules'])),
    modulesToSave: stringList(get(['lora_modules_to_save'])) ?? [],
    adapterDtype: quant ? 'bfloat16' : 'float32',
  };
  return { ...(weights ? { weights } : {}), lora, keys };
}

/** A PEFT adapter_config.json (LoraConfig as saved): its rank, targets, dropout and modules_to_save. */
export function loraFromAdapterConfig(config: unknown): LoraPlan | string {
  if (!config || typeof config !== 'object' || Array.isArray(config)) return 'not a JSON object';
  const c = config as Record<string, unknown>;
  if (c.peft_type !== undefined && c.peft_type !== 'LORA') return `peft_type ${String(c.peft_type)} is not LoRA`;
  const r = positive(c.r);
  if (r === undefined) return `r ${JSON.stringify(c.r)} is not a positive integer`;
  return {
    r,
    alpha: positive(c.lora_alpha) ?? 8,
    dropout: fraction(c.lora_dropout) ?? 0,
    targets: targetsOf(c.target_modules),
    modulesToSave: stringList(c.modules_to_save) ?? [],
    adapterDtype: 'float32',
  };
}

/** PEFT's target_modules: a list, `all-linear`, a single name, or none (the family's defaults, resolved by the model). */
function targetsOf(v: unknown): LoraPlan['targets'] {
  if (v === 'all-linear' || (Array.isArray(v) && v.length === 1 && v[0] === 'all-linear')) return 'all-linear';
  if (typeof v === 'string' && v) return [v];
  return stringList(v) ?? [];
}

function stringList(v: unknown): string[] | undefined {
  if (typeof v === 'string' && v) return [v];
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : undefined;
}

function positive(v: unknown): number | undefined {
  const n = typeof v === 'string' ? Number(v) : v;
  return typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : undefined;
}

function fraction(v: unknown): number | undefined {
  const n = typeof v === 'string' ? Number(v) : v;
  return typeof n === 'number' && n >= 0 && n < 1 ? n : undefined;
}
