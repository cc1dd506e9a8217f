// Hugging Face TrainingArguments / TRL arguments (YAML, as `trl sft --config` reads them): one case
// per schema check and rule, as in rule-cases.ts.
import type { RuleCase } from './rule-cases';

const SFT = `model_name_or_path: Qwen/Qwen2.5-0.5B
dataset_name: trl-lib/Capybara
output_dir: out
per_device_train_batch_size: 2
gradient_accumulation_steps: 4
learning_rate: 2.0e-5
bf16: true
max_length: 2048
`;
const sft = (extra: string) => SFT + extra;
const at = (find: string, replace: string) => SFT.replace(find, replace);

export const HF_TRAINING_RULE_CASES: RuleCase[] = [
  {
    name: 'a misspelt argument, with did-you-mean',
    file: 'sft-typo.yaml',
    code: 'schema.unknown-key',
    severity: 'error',
    fixes: 1,
    marked: at('per_device_train_batch_size: 2', '⟪per_device_train_batchsize⟫: 2'),
    clean: SFT,
  },
  {
    name: 'an argument older releases had',
    file: 'sft-old.yaml',
    code: 'schema.unknown-key',
    severity: 'error',
    fixes: 1,
    marked: at('max_length: 2048', '⟪max_seq_length⟫: 2048'),
    clean: SFT,
  },
  {
    name: 'a value outside an enum',
    file: 'sft-enum.yaml',
    code: 'schema.enum',
    severity: 'error',
    fixes: 1,
    marked: sft('lr_scheduler_type: ⟪cosin⟫\n'),
    clean: sft('lr_scheduler_type: cosine\n'),
  },
  {
    name: 'a deprecated argument',
    file: 'sft-deprecated.yaml',
    code: 'schema.deprecated',
    severity: 'warning',
    fixes: 1,
    marked: sft('⟪gradient_checkpointing⟫: true\n'),
    clean: sft('activation_checkpointing: true\n'),
  },
  {
    name: 'fp16 and bf16 together',
    file: 'sft-precision.yaml',
    code: 'hf.precision',
    severity: 'error',
    fixes: 2,
    marked: sft('⟪fp16⟫: true\n'),
    clean: sft('fp16: false\n'),
  },
  {
    name: 'load_best_model_at_end with strategies that differ',
    file: 'sft-best.yaml',
    code: 'hf.best-model-strategies',
    severity: 'error',
    fixes: 1,
    marked: sft('eval_strategy: epoch\nsave_strategy: ⟪steps⟫\nload_best_model_at_end: true\n'),
    clean: sft('eval_strategy: epoch\nsave_strategy: epoch\nload_best_model_at_end: true\n'),
  },
  {
    name: 'fsdp as a string of options (deprecated)',
    file: 'sft-fsdp-string.yaml',
    code: 'hf.fsdp',
    severity: 'warning',
    fixes: 1,
    marked: sft('fsdp: ⟪full_shard auto_wrap⟫\n'),
    clean: sft('fsdp: true\nfsdp_config:\n  reshard_after_forward: true\n'),
  },
  {
    name: 'an FSDP1-only strategy under FSDP2',
    file: 'sft-fsdp-hybrid.yaml',
    code: 'hf.fsdp',
    severity: 'error',
    marked: sft('fsdp: ⟪hybrid_shard auto_wrap⟫\n'),
    clean: sft('fsdp: true\n'),
  },
  {
    name: 'a misspelt fsdp_config key',
    file: 'sft-fsdp-config.yaml',
    code: 'hf.fsdp-config',
    severity: 'warning',
    fixes: 1,
    marked: sft('fsdp: true\nfsdp_config:\n  ⟪reshard_after_foward⟫: false\n'),
    clean: sft('fsdp: true\nfsdp_config:\n  reshard_after_forward: false\n'),
  },
  {
    name: 'activation checkpointing outside FSDP',
    file: 'sft-fsdp-ac.yaml',
    code: 'hf.fsdp-config',
    severity: 'warning',
    fixes: 1,
    marked: sft('activation_checkpointing: true\nfsdp: true\nfsdp_config:\n  version: 2\n').replace(
      'activation_checkpointing:',
      '⟪activation_checkpointing⟫:',
    ),
    clean: sft('fsdp: true\nfsdp_config:\n  version: 2\n  activation_checkpointing: true\n'),
  },
  {
    name: 'a DeepSpeed file whose micro-batch contradicts the arguments',
    file: 'sft-ds.yaml',
    code: 'hf.deepspeed',
    severity: 'error',
    fixes: 1,
    marked: at('per_device_train_batch_size: 2', 'per_device_train_batch_size: ⟪4⟫') + 'deepspeed: ds_hf.json\n',
    clean: sft('deepspeed: ds_hf.json\n'),
  },
  {
    name: 'a DeepSpeed file with errors of its own',
    file: 'sft-ds-broken.yaml',
    code: 'hf.deepspeed',
    severity: 'error',
    marked: sft('deepspeed: ⟪ds_no_zero_bad.json⟫\n'),
    clean: sft('deepspeed: ds_hf.json\n'),
  },
  {
    name: 'keys of two TRL trainers in one file',
    file: 'sft-mix.yaml',
    code: 'hf.trainer-mix',
    severity: 'warning',
    fixes: 1,
    marked: sft('packing: true\ncompletion_only_loss: true\n⟪beta⟫: 0.1\n'),
    clean: sft('packing: true\ncompletion_only_loss: true\n'),
  },
];
