// Which kind of config a file is: our run config, a DeepSpeed config, an accelerate config, a
// launch spec for a person's own training command, a torchtitan job config (TOML), or Hugging Face
// TrainingArguments / TRL arguments written as YAML or JSON (`trl sft --config …`). The
// user's associations (setting fsdp.files.associations) win, then the file name, then the content:
// people name DeepSpeed files anything, so the keys at the top decide when the name does not.
import { minimatch } from 'minimatch';

export type ConfigKind = 'run-config' | 'deepspeed' | 'accelerate' | 'launch-spec' | 'torchtitan' | 'hf-training';
/** What a user may associate a glob with: a kind, or "none" to leave matching files alone. */
export type ConfigAssociation = ConfigKind | 'none';

export function recogniseConfig(
  fileName: string,
  text: string,
  associations: Record<string, ConfigAssociation> = {},
): ConfigKind | undefined {
  const normalised = fileName.replace(/\\/g, '/');
  for (const [glob, kind] of Object.entries(associations)) {
    // As in VS Code's files.associations: a pattern without a slash matches the file name.
    if (minimatch(normalised, glob, { dot: true, matchBase: !glob.includes('/'), nocase: true }))
      return kind === 'none' ? undefined : kind;
  }
  return byName(normalised) ?? byContent(normalised, text);
}

function byName(file: string): ConfigKind | undefined {
  const base = file.slice(file.lastIndexOf('/') + 1).toLowerCase();
  if (/\.fsdp\.ya?ml$/.test(base)) return 'run-config';
  if (/\.fsdp-launch\.ya?ml$/.test(base)) return 'launch-spec';
  if (/\.jsonc?$/.test(base) && (/^ds_config/.test(base) || base.includes('deepspeed'))) return 'deepspeed';
  if (/\.ya?ml$/.test(base) && (base.includes('accelerate') || /\/huggingface\/accelerate\/[^/]+$/.test(file)))
    return 'accelerate';
  return undefined;
}

// Keys only DeepSpeed configs have at the top; a JSON file with none of them is not one.
const DEEPSPEED_KEYS = [
  'zero_optimization',
  'train_micro_batch_size_per_gpu',
  'train_batch_size',
  'zero_allow_untested_optimizer',
  'steps_per_print',
  'wall_clock_breakdown',
];

// torchtitan's JobConfig sections; a TOML file with two of them is a job config (pyproject.toml has none).
const TORCHTITAN_SECTIONS = [
  'job',
  'model',
  'training',
  'parallelism',
  'optimizer',
  'lr_scheduler',
  'checkpoint',
  'activation_checkpoint',
  'metrics',
  'compile',
];

// TrainingArguments / TRL keys no other config we know has at its top; three of them make a file one.
const TRAINING_ARGUMENT_KEYS = [
  'per_device_train_batch_size',
  'per_device_eval_batch_size',
  'num_train_epochs',
  'output_dir',
  'learning_rate',
  'logging_steps',
  'save_strategy',
  'eval_strategy',
  'lr_scheduler_type',
  'warmup_ratio',
  'warmup_steps',
  'gradient_checkpointing',
  'activation_checkpointing',
  'report_to',
  'max_steps',
  'save_steps',
  'model_name_or_path',
  'dataset_name',
  'bf16',
  'fsdp',
  'fsdp_config',
  'push_to_hub',
  'max_length',
  'packing',
];

function byContent(file: string, text: string): ConfigKind | undefined {
  if (/\.toml$/i.test(file)) {
    const tables = tomlTopLevelTables(text);
    return TORCHTITAN_SECTIONS.filter((k) => tables.has(k)).length >= 2 ? 'torchtitan' : undefined;
  }
  const keys = topLevelKeys(file, text);
  if (['model', 'data', 'training'].every((k) => keys.has(k))) return 'run-config';
  if (
    /\.ya?ml$/i.test(file) &&
    keys.has('command') &&
    (keys.has('logs') || keys.has('nproc_per_node') || (keys.has('target') && keys.has('cwd')))
  )
    return 'launch-spec';
  if (/\.jsonc?$/i.test(file) && DEEPSPEED_KEYS.some((k) => keys.has(k))) return 'deepspeed';
  if (
    /\.ya?ml$/i.test(file) &&
    keys.has('distributed_type') &&
    (keys.has('compute_environment') ||
      keys.has('num_processes') ||
      keys.has('mixed_precision') ||
      keys.has('fsdp_config') ||
      keys.has('deepspeed_config'))
  )
    return 'accelerate';
  if (
    /\.(ya?ml|jsonc?)$/i.test(file) &&
    !keys.has('distributed_type') &&
    TRAINING_ARGUMENT_KEYS.filter((k) => keys.has(k)).length >= 3
  )
    return 'hf-training';
  return undefined;
}

/** The first key of each `[table]` / `[[table]]` header and the root's own keys, read from the lines. */
export function tomlTopLevelTables(text: string): Set<string> {
  const tables = new Set<string>();
  for (const m of text.matchAll(/^[ \t]*\[\[?[ \t]*["']?([A-Za-z0-9_-]+)/gm)) tables.add(m[1]);
  return tables;
}

/**
 * The keys at the top level, read from the text without parsing it (recognition runs on every
 * change of every YAML and JSON file, most of which are not configs). YAML: keys at column 0.
 * JSON: keys of the outermost object, found by tracking brace depth outside strings.
 */
export function topLevelKeys(file: string, text: string): Set<string> {
  const keys = new Set<string>();
  if (!/\.(jsonc?|hjson)$/i.test(file)) {
    for (const m of text.matchAll(/^["']?([A-Za-z_][\w.-]*)["']?[ \t]*:/gm)) keys.add(m[1]);
    return keys;
  }
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '/' && text[i + 1] === '/') i = text.indexOf('\n', i) === -1 ? text.length : text.indexOf('\n', i);
    else if (c === '/' && text[i + 1] === '*')
      i = text.indexOf('*/', i + 2) === -1 ? text.length : text.indexOf('*/', i + 2) + 1;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
    else if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      if (depth === 1 && /^\s*:/.test(text.slice(j + 1, j + 20))) keys.add(text.slice(i + 1, j));
      i = j;
    }
  }
  return keys;
}
