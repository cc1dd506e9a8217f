// One case per rule (and per schema check): a config that triggers it, with the exact range of each
// expected diagnostic marked ⟪…⟫, and a close variant that does not. Files live in a temporary
// folder, next to the DeepSpeed files the accelerate cases refer to.

import { HF_TRAINING_RULE_CASES } from './rule-cases-hf-training';
import { TORCHTITAN_RULE_CASES } from './rule-cases-torchtitan';

export interface RuleCase {
  name: string;
  /** File name inside the test folder; decides how the config is recognised. */
  file: string;
  code: string;
  severity: 'error' | 'warning' | 'information' | 'hint';
  /** The triggering config, ranges marked. */
  marked: string;
  /** A variant that does not trigger the rule. */
  clean: string;
  /** Number of quick fixes offered for each diagnostic (each must make the config pass). */
  fixes?: number;
  /** The `fsdp` settings to run with. */
  settings?: Record<string, unknown>;
}

/** DeepSpeed files the accelerate cases refer to by deepspeed_config_file. */
export const REFERENCED_FILES: Record<string, string> = {
  'ds_bf16.json': JSON.stringify(
    {
      train_batch_size: 16,
      train_micro_batch_size_per_gpu: 2,
      gradient_accumulation_steps: 1,
      bf16: { enabled: true },
      zero_optimization: { stage: 2 },
    },
    null,
    2,
  ),
  'ds_stage3.json': JSON.stringify({ train_micro_batch_size_per_gpu: 2, zero_optimization: { stage: 3 } }, null, 2),
  'ds_no_zero.json': JSON.stringify({ train_micro_batch_size_per_gpu: 2 }, null, 2),
  'ds_hf.json': JSON.stringify(
    {
      train_batch_size: 'auto',
      train_micro_batch_size_per_gpu: 2,
      gradient_accumulation_steps: 'auto',
      bf16: { enabled: true },
      zero_optimization: { stage: 2 },
    },
    null,
    2,
  ),
  'ds_no_zero_bad.json': JSON.stringify(
    { train_micro_batch_size_per_gpu: 2, fp16: { enabled: true }, bf16: { enabled: true } },
    null,
    2,
  ),
};

const RUN = `model: {d_model: 64, n_layers: 2, n_heads: 4, vocab_size: 256, max_seq_len: 32}
data: {train: data/train.tok}
training: {batch_size_per_gpu: 2, max_steps: 10, learning_rate: 0.001}
`;
const run = (extra: string) => RUN + extra;

const WORLD_4 = { deepspeed: { worldSize: 4 } };
const DS_ONLY = { deepspeed: { launchedWith: 'deepspeed' } };

export const RULE_CASES: RuleCase[] = [
  // ---- run config --------------------------------------------------------------------------
  {
    name: 'n_heads must divide d_model',
    file: 'heads.fsdp.yaml',
    code: 'run.heads-divide-width',
    severity: 'error',
    marked: RUN.replace('n_heads: 4', 'n_heads: ⟪5⟫'),
    clean: RUN.replace('n_heads: 4', 'n_heads: 8'),
  },
  {
    name: "n_kv_heads must divide n_heads (the schema's x-checks)",
    file: 'kv-heads.fsdp.yaml',
    code: 'run.kv-heads-divide-heads',
    severity: 'error',
    marked: RUN.replace('n_heads: 4', 'n_heads: 4, architecture: llama, intermediate_size: 172, n_kv_heads: ⟪3⟫'),
    clean: RUN.replace('n_heads: 4', 'n_heads: 4, architecture: llama, intermediate_size: 172, n_kv_heads: 2'),
  },
  {
    name: 'a Llama-family key on a gpt2 model (x-only-when)',
    file: 'only-when.fsdp.yaml',
    code: 'schema.only-when',
    severity: 'error',
    fixes: 1,
    marked: RUN.replace('n_heads: 4', 'n_heads: 4, ⟪n_kv_heads⟫: 2'),
    clean: RUN.replace('n_heads: 4', 'n_heads: 4, architecture: llama, intermediate_size: 172, n_kv_heads: 2'),
  },
  {
    name: 'a learning rate AdamW diverges with',
    file: 'lr.fsdp.yaml',
    code: 'run.learning-rate-high',
    severity: 'warning',
    fixes: 1,
    marked: RUN.replace('learning_rate: 0.001', 'learning_rate: ⟪5.0⟫'),
    clean: RUN.replace('learning_rate: 0.001', 'learning_rate: 0.05'),
  },
  {
    name: 'seq_len beyond max_seq_len',
    file: 'seq.fsdp.yaml',
    code: 'run.seq-len',
    severity: 'error',
    fixes: 2,
    marked: RUN.replace('data/train.tok}', 'data/train.tok, seq_len: ⟪64⟫}'),
    clean: RUN.replace('data/train.tok}', 'data/train.tok, seq_len: 32}'),
  },
  {
    name: 'a sharding strategy with world size 1',
    file: 'one-rank.fsdp.yaml',
    code: 'run.sharding-one-rank',
    severity: 'warning',
    fixes: 1,
    marked: run('fsdp:\n  sharding_strategy: ⟪FULL_SHARD⟫\n'),
    clean: run('fsdp:\n  sharding_strategy: FULL_SHARD\nlaunch:\n  nproc_per_node: 2\n'),
  },
  {
    name: 'zero_stage with world size 1',
    file: 'one-rank-zero.fsdp.yaml',
    code: 'run.sharding-one-rank',
    severity: 'warning',
    fixes: 1,
    marked: run('fsdp: {zero_stage: ⟪2⟫}\n'),
    clean: run('fsdp: {zero_stage: 0}\n'),
  },
  {
    name: 'HYBRID_SHARD on one node',
    file: 'hybrid.fsdp.yaml',
    code: 'run.hybrid-one-node',
    severity: 'warning',
    fixes: 1,
    marked: run('fsdp:\n  sharding_strategy: ⟪HYBRID_SHARD⟫\nlaunch:\n  nproc_per_node: 4\n'),
    clean: run('fsdp:\n  sharding_strategy: HYBRID_SHARD\n  ranks_per_node: 2\nlaunch:\n  nproc_per_node: 4\n'),
  },
  {
    name: 'HYBRID_SHARD with shard groups that do not divide the world',
    file: 'hybrid-groups.fsdp.yaml',
    code: 'run.hybrid-one-node',
    severity: 'error',
    marked: run('fsdp:\n  sharding_strategy: HYBRID_SHARD\n  ranks_per_node: ⟪3⟫\nlaunch:\n  nproc_per_node: 4\n'),
    clean: run('fsdp:\n  sharding_strategy: HYBRID_SHARD\n  ranks_per_node: 2\nlaunch:\n  nproc_per_node: 4\n'),
  },
  {
    name: 'gradient accumulation with CPU offload',
    file: 'offload.fsdp.yaml',
    code: 'run.accumulation-cpu-offload',
    severity: 'warning',
    marked:
      RUN.replace('batch_size_per_gpu: 2,', 'batch_size_per_gpu: 2, gradient_accumulation_steps: ⟪4⟫,') +
      'fsdp: {cpu_offload: true, sharding_strategy: NO_SHARD}\n',
    clean:
      RUN.replace('batch_size_per_gpu: 2,', 'batch_size_per_gpu: 2, gradient_accumulation_steps: 4,') +
      'fsdp: {cpu_offload: false, sharding_strategy: NO_SHARD}\n',
  },
  {
    name: 'float16 without loss scaling',
    file: 'fp16.fsdp.yaml',
    code: 'run.fp16-loss-scaling',
    severity: 'warning',
    fixes: 1,
    marked: run('mixed_precision:\n  param_dtype: float16\n  ⟪loss_scale⟫: {dynamic: false, initial: 1}\n'),
    clean: run('mixed_precision:\n  param_dtype: float16\n  loss_scale: {dynamic: false, initial: 1024}\n'),
  },
  {
    name: 'activation checkpointing policy without enabled',
    file: 'ac.fsdp.yaml',
    code: 'run.activation-checkpointing-disabled',
    severity: 'warning',
    fixes: 1,
    marked: run('activation_checkpointing:\n  ⟪policy⟫: selective\n'),
    clean: run('activation_checkpointing:\n  enabled: true\n  policy: selective\n'),
  },
  {
    name: 'checkpoint interval longer than the run',
    file: 'ckpt.fsdp.yaml',
    code: 'run.checkpoint-interval',
    severity: 'warning',
    fixes: 1,
    marked: run('checkpointing:\n  save_every_n_steps: ⟪100⟫\n'),
    clean: run('checkpointing:\n  save_every_n_steps: 5\n'),
  },
  {
    name: 'launch.slurm and launch.hosts together',
    file: 'slurm-hosts.fsdp.yaml',
    code: 'run.slurm-or-hosts',
    severity: 'error',
    marked: run('launch:\n  nnodes: 2\n  slurm: {partition: gpu}\n  ⟪hosts⟫: [a, b]\n'),
    clean: run('launch:\n  nnodes: 2\n  slurm: {partition: gpu}\n'),
  },
  {
    name: 'launch.hosts with another number of nodes',
    file: 'hosts-nodes.fsdp.yaml',
    code: 'run.hosts-nodes',
    severity: 'error',
    fixes: 1,
    marked: run('launch:\n  nnodes: ⟪3⟫\n  hosts: [gpu-a, gpu-b]\n'),
    clean: run('launch:\n  nnodes: 2\n  hosts: [gpu-a, gpu-b]\n'),
  },
  {
    name: 'launch.hosts with a target other than its first host',
    file: 'hosts-target.fsdp.yaml',
    code: 'run.hosts-nodes',
    severity: 'error',
    fixes: 1,
    marked: run('launch:\n  target: ⟪gpu-c⟫\n  nnodes: 2\n  hosts: [gpu-a, gpu-b]\n'),
    clean: run('launch:\n  target: gpu-a\n  nnodes: 2\n  hosts: [gpu-a, gpu-b]\n'),
  },
  {
    name: 'a CUDA SLURM job with fewer GPUs than tasks per node',
    file: 'slurm-gpus.fsdp.yaml',
    code: 'run.slurm-gpus',
    severity: 'error',
    fixes: 1,
    marked: run('launch:\n  device: cuda\n  nproc_per_node: 4\n  slurm: {gpus_per_node: ⟪2⟫}\n'),
    clean: run('launch:\n  device: cuda\n  nproc_per_node: 4\n  slurm: {gpus_per_node: 4}\n'),
  },
  {
    name: 'an extra #SBATCH line setting what the config sets',
    file: 'slurm-directive.fsdp.yaml',
    code: 'run.slurm-directive',
    severity: 'error',
    marked: run('launch:\n  slurm:\n    extra_directives: [--exclusive, ⟪--ntasks-per-node=8⟫]\n'),
    clean: run('launch:\n  slurm:\n    extra_directives: [--exclusive]\n'),
  },
  {
    name: 'an extra #SBATCH line overriding the working directory in a short spelling',
    file: 'slurm-directive-short.fsdp.yaml',
    code: 'run.slurm-directive',
    severity: 'error',
    marked: run('launch:\n  slurm:\n    extra_directives: [--constraint=a100, ⟪-D /scratch⟫]\n'),
    clean: run('launch:\n  slurm:\n    extra_directives: [--constraint=a100, -C a100]\n'),
  },
  {
    name: 'an extra #SBATCH line turning requeue off by an abbreviation',
    file: 'slurm-directive-abbrev.fsdp.yaml',
    code: 'run.slurm-directive',
    severity: 'error',
    marked: run('launch:\n  slurm:\n    extra_directives: [⟪--no-requ⟫]\n'),
    clean: run('launch:\n  slurm:\n    extra_directives: [--nodelist=a]\n'),
  },
  {
    name: 'an extra #SBATCH line setting the signal with the value attached',
    file: 'slurm-directive-sig.fsdp.yaml',
    code: 'run.slurm-directive',
    severity: 'error',
    marked: run('launch:\n  slurm:\n    extra_directives: [⟪--sig=B:USR1@30⟫, ⟪-t10⟫]\n'),
    clean: run('launch:\n  slurm:\n    extra_directives: [--mail-type=END]\n'),
  },
  {
    name: 'extra #SBATCH lines that change how sbatch or the job behaves (--wait, an array, a dependency)',
    file: 'slurm-directive-behaviour.fsdp.yaml',
    code: 'run.slurm-directive',
    severity: 'error',
    marked: run('launch:\n  slurm:\n    extra_directives: [⟪-W⟫, ⟪--array=0-1⟫, ⟪--dep afterok:12⟫, ⟪-H⟫]\n'),
    clean: run('launch:\n  slurm:\n    extra_directives: [--begin=now+60, --mail-type=END]\n'),
  },
  {
    name: 'an extra #SBATCH option sbatch cannot read (ambiguous abbreviation)',
    file: 'slurm-directive-ambiguous.fsdp.yaml',
    code: 'run.slurm-directive',
    severity: 'warning',
    marked: run('launch:\n  slurm:\n    extra_directives: [⟪--ti=5⟫]\n'),
    clean: run('launch:\n  slurm:\n    extra_directives: [--time-min=5]\n'),
  },
  {
    name: 'the save-and-requeue signal as early as the time limit',
    file: 'slurm-signal.fsdp.yaml',
    code: 'run.slurm-signal',
    severity: 'warning',
    marked: run('launch:\n  slurm: {time_limit: "00:02:00", signal_before_limit_s: ⟪120⟫}\n'),
    clean: run('launch:\n  slurm: {time_limit: "00:10:00", signal_before_limit_s: 120}\n'),
  },
  {
    name: 'zero_stage contradicting sharding_strategy',
    file: 'alias.fsdp.yaml',
    code: 'fsdp.zero-stage-conflict',
    severity: 'error',
    marked: run('fsdp: {⟪zero_stage⟫: 1, sharding_strategy: FULL_SHARD}\nlaunch: {nproc_per_node: 2}\n'),
    clean: run('fsdp: {zero_stage: 3, sharding_strategy: FULL_SHARD}\nlaunch: {nproc_per_node: 2}\n'),
  },
  {
    name: 'run config: misspelled key, with the rename',
    file: 'typo.fsdp.yaml',
    code: 'schema.unknown-key',
    severity: 'error',
    fixes: 1,
    marked: RUN.replace('learning_rate: 0.001', 'learning_rate: 0.001, ⟪max_grad_nrom⟫: 1.0'),
    clean: RUN.replace('learning_rate: 0.001', 'learning_rate: 0.001, max_grad_norm: 1.0'),
  },
  {
    name: 'run config: misspelled enum value, with the correction',
    file: 'enum.fsdp.yaml',
    code: 'schema.enum',
    severity: 'error',
    fixes: 1,
    marked: run('fsdp:\n  sharding_strategy: ⟪NO_SHRAD⟫\n'),
    clean: run('fsdp:\n  sharding_strategy: NO_SHARD\n'),
  },

  // ---- DeepSpeed -----------------------------------------------------------------------------
  {
    name: 'train_batch_size is not the product (world size from the setting)',
    file: 'ds_config.json',
    code: 'deepspeed.batch-size',
    severity: 'error',
    fixes: 1,
    settings: WORLD_4,
    marked:
      '{\n  "train_batch_size": ⟪30⟫,\n  "train_micro_batch_size_per_gpu": 4,\n  "gradient_accumulation_steps": 2\n}\n',
    clean:
      '{\n  "train_batch_size": 32,\n  "train_micro_batch_size_per_gpu": 4,\n  "gradient_accumulation_steps": 2\n}\n',
  },
  {
    name: 'train_batch_size not a multiple of micro x accumulation (world size unknown)',
    file: 'ds_config_nodiv.json',
    code: 'deepspeed.batch-size',
    severity: 'error',
    marked: '{"train_batch_size": ⟪30⟫, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2}',
    clean: '{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2}',
  },
  {
    name: 'train_batch_size whose inferred split does not divide (world size 4)',
    file: 'ds_config_infer.json',
    code: 'deepspeed.batch-size',
    severity: 'error',
    settings: WORLD_4,
    marked: '{"train_batch_size": ⟪6⟫, "train_micro_batch_size_per_gpu": 1}',
    clean: '{"train_batch_size": 8, "train_micro_batch_size_per_gpu": 1}',
  },
  {
    name: 'neither train_batch_size nor the micro batch, launched with deepspeed alone',
    file: 'ds_config_nobatch.json',
    code: 'deepspeed.batch-size',
    severity: 'error',
    settings: DS_ONLY,
    marked: '⟪{"zero_optimization": {"stage": 1}}⟫',
    clean: '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 1}}',
  },
  {
    name: 'fp16 and bf16 both enabled',
    file: 'ds_config_fp.json',
    code: 'deepspeed.fp16-and-bf16',
    severity: 'error',
    fixes: 2,
    marked: '{"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": true}, "bf16": {"enabled": ⟪true⟫}}',
    clean: '{"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": false}, "bf16": {"enabled": true}}',
  },
  {
    name: 'amp with ZeRO',
    file: 'ds_config_amp.json',
    code: 'deepspeed.amp-conflict',
    severity: 'error',
    marked:
      '{"train_micro_batch_size_per_gpu": 1, "amp": {"enabled": ⟪true⟫, "opt_level": "O1"}, "zero_optimization": {"stage": 1}}',
    clean:
      '{"train_micro_batch_size_per_gpu": 1, "amp": {"enabled": true, "opt_level": "O1"}, "zero_optimization": {"stage": 0}}',
  },
  {
    name: 'amp with fp16',
    file: 'ds_config_amp16.json',
    code: 'deepspeed.amp-conflict',
    severity: 'error',
    fixes: 1,
    marked: '{"train_micro_batch_size_per_gpu": 1, "amp": {"enabled": ⟪true⟫}, "fp16": {"enabled": true}}',
    clean: '{"train_micro_batch_size_per_gpu": 1, "amp": {"enabled": false}, "fp16": {"enabled": true}}',
  },
  {
    name: 'bf16 master weights without ZeRO',
    file: 'ds_config_mw.json',
    code: 'deepspeed.master-weights-need-zero',
    severity: 'error',
    fixes: 1,
    marked: '{"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true, ⟪"bf16_master_weights_and_grads"⟫: true}}',
    clean:
      '{"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true, "bf16_master_weights_and_grads": true}, "zero_optimization": {"stage": 1}}',
  },
  {
    name: 'bf16_optimizer_states without bf16 master weights',
    file: 'ds_config_os.json',
    code: 'deepspeed.master-weights-need-zero',
    severity: 'error',
    fixes: 1,
    marked:
      '{"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true, ⟪"bf16_optimizer_states"⟫: true}, "zero_optimization": {"stage": 2}}',
    clean:
      '{"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true, "bf16_optimizer_states": true, "bf16_master_weights_and_grads": true}, "zero_optimization": {"stage": 2}}',
  },
  {
    name: 'dynamic loss scaling window and hysteresis out of range',
    file: 'ds_config_ls.json',
    code: 'deepspeed.loss-scale-range',
    severity: 'error',
    marked:
      '{"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": true, "loss_scale": 0, "loss_scale_window": ⟪0⟫, "hysteresis": ⟪0⟫}}',
    clean:
      '{"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": true, "loss_scale": 0, "loss_scale_window": 1000, "hysteresis": 2}}',
  },
  {
    name: 'the deprecated boolean zero_optimization',
    file: 'ds_config_zb.json',
    code: 'deepspeed.zero-boolean',
    severity: 'warning',
    fixes: 1,
    marked: '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": ⟪true⟫}',
    clean: '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 1}}',
  },
  {
    name: 'offload_param below stage 3',
    file: 'ds_config_op.json',
    code: 'deepspeed.offload-ignored',
    severity: 'warning',
    fixes: 1,
    marked:
      '{\n  "train_micro_batch_size_per_gpu": 1,\n  "zero_optimization": {\n    "stage": 2,\n    ⟪"offload_param"⟫: {"device": "cpu"}\n  }\n}\n',
    clean:
      '{\n  "train_micro_batch_size_per_gpu": 1,\n  "zero_optimization": {\n    "stage": 3,\n    "offload_param": {"device": "cpu"}\n  }\n}\n',
  },
  {
    name: 'NVMe optimizer offload below stage 3',
    file: 'ds_config_nv2.json',
    code: 'deepspeed.offload-ignored',
    severity: 'warning',
    fixes: 1,
    marked:
      '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": ⟪"nvme"⟫, "nvme_path": "/nvme"}}}',
    clean:
      '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}',
  },
  {
    name: 'partial optimizer offload below stage 3',
    file: 'ds_config_ratio.json',
    code: 'deepspeed.partial-offload-stage',
    severity: 'error',
    fixes: 1,
    marked:
      '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "ratio": ⟪0.3⟫}}}',
    clean:
      '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "ratio": 0.3}}}',
  },
  {
    name: 'NVMe offload without nvme_path',
    file: 'ds_config_nvme.json',
    code: 'deepspeed.nvme-path',
    severity: 'error',
    marked:
      '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3, "offload_param": {"device": ⟪"nvme"⟫}}}',
    clean:
      '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3, "offload_param": {"device": "nvme", "nvme_path": "/local_nvme"}}}',
  },
  {
    name: 'stage3_* keys below stage 3',
    file: 'ds_config_s3.json',
    code: 'deepspeed.stage3-keys-ignored',
    severity: 'warning',
    fixes: 1,
    marked:
      '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2, ⟪"stage3_max_live_parameters"⟫: 1e9}}',
    clean:
      '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3, "stage3_max_live_parameters": 1e9}}',
  },
  {
    name: 'gradient_allreduce_op sum with stage 3',
    file: 'ds_config_sum.json',
    code: 'deepspeed.allreduce-sum-stage3',
    severity: 'error',
    fixes: 1,
    marked:
      '{"train_micro_batch_size_per_gpu": 1, "gradient_allreduce_op": ⟪"sum"⟫, "zero_optimization": {"stage": 3}}',
    clean: '{"train_micro_batch_size_per_gpu": 1, "gradient_allreduce_op": "sum", "zero_optimization": {"stage": 2}}',
  },
  {
    name: '1-bit Adam with ZeRO',
    file: 'ds_config_1bit.json',
    code: 'deepspeed.onebit-zero',
    severity: 'error',
    fixes: 1,
    marked:
      '{"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": ⟪"OneBitAdam"⟫, "params": {"lr": 0.001}}, "zero_optimization": {"stage": 1}}',
    clean:
      '{"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "Adam", "params": {"lr": 0.001}}, "zero_optimization": {"stage": 1}}',
  },
  {
    name: 'LAMB with a static loss scale',
    file: 'ds_config_lamb.json',
    code: 'deepspeed.lamb-static-loss-scale',
    severity: 'error',
    fixes: 1,
    marked:
      '{"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "Lamb"}, "fp16": {"enabled": true, "loss_scale": ⟪128⟫}}',
    clean:
      '{"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "Lamb"}, "fp16": {"enabled": true, "loss_scale": 0}}',
  },
  {
    name: 'a misspelled scheduler parameter',
    file: 'ds_config_sched.json',
    code: 'deepspeed.scheduler',
    severity: 'error',
    fixes: 1,
    marked:
      '{"train_micro_batch_size_per_gpu": 1, "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0, ⟪"warmup_num_step"⟫: 100}}}',
    clean:
      '{"train_micro_batch_size_per_gpu": 1, "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0, "warmup_num_steps": 100}}}',
  },
  {
    name: 'a misspelled scheduler name',
    file: 'ds_config_sched2.json',
    code: 'deepspeed.scheduler',
    severity: 'error',
    fixes: 1,
    marked:
      '{"train_micro_batch_size_per_gpu": 1, "scheduler": {"type": ⟪"WarmupCosineLr"⟫, "params": {"total_num_steps": 1000}}}',
    clean:
      '{"train_micro_batch_size_per_gpu": 1, "scheduler": {"type": "CosineAnnealingLR", "params": {"T_max": 1000}}}',
  },
  {
    name: 'a scheduler without its required parameter',
    file: 'ds_config_sched3.json',
    code: 'deepspeed.scheduler',
    severity: 'error',
    marked:
      '{"train_micro_batch_size_per_gpu": 1, "scheduler": {"type": "WarmupDecayLR", ⟪"params"⟫: {"warmup_num_steps": 10}}}',
    clean:
      '{"train_micro_batch_size_per_gpu": 1, "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": 10, "total_num_steps": "auto"}}}',
  },
  {
    name: 'contiguous memory optimisation without partitioned activations',
    file: 'ds_config_ac.json',
    code: 'deepspeed.contiguous-checkpointing',
    severity: 'error',
    fixes: 1,
    marked:
      '{"train_micro_batch_size_per_gpu": 1, "activation_checkpointing": {"contiguous_memory_optimization": ⟪true⟫, "number_checkpoints": 4}}',
    clean:
      '{"train_micro_batch_size_per_gpu": 1, "activation_checkpointing": {"partition_activations": true, "contiguous_memory_optimization": true, "number_checkpoints": 4}}',
  },
  {
    name: 'a comment in a .json config, the launcher unknown: DeepSpeed reads it, json.load would not',
    file: 'ds_config_comment.json',
    code: 'deepspeed.json-comments',
    severity: 'information',
    marked: '⟪// fsdp-studio: gpu=H100⟫\n{"train_micro_batch_size_per_gpu": 4, "note": "// not a comment"}',
    clean: '{"train_micro_batch_size_per_gpu": 4, "note": "// not a comment"}',
  },
  {
    name: 'a comment in a .json config launched through Hugging Face (json.load)',
    file: 'ds_config_comment2.json',
    code: 'deepspeed.json-comments',
    severity: 'error',
    settings: { deepspeed: { launchedWith: 'huggingface' } },
    marked: '{"train_micro_batch_size_per_gpu": 4, ⟪/* tuned */⟫ "zero_optimization": {"stage": 2}}',
    clean: '{"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}}',
  },
  {
    name: 'top-level "auto" launched with deepspeed alone',
    file: 'ds_config_auto.json',
    code: 'deepspeed.auto',
    severity: 'error',
    settings: DS_ONLY,
    marked: '{"train_micro_batch_size_per_gpu": ⟪"auto"⟫}',
    clean: '{"train_micro_batch_size_per_gpu": 4}',
  },
  {
    name: 'nested "auto" launched with deepspeed alone',
    file: 'ds_config_auto2.json',
    code: 'deepspeed.auto',
    severity: 'warning',
    settings: DS_ONLY,
    marked: '{"train_micro_batch_size_per_gpu": 4, "fp16": {"enabled": ⟪"auto"⟫}}',
    clean: '{"train_micro_batch_size_per_gpu": 4, "fp16": {"enabled": true}}',
  },
  {
    name: '"auto" where not even Hugging Face fills it in',
    file: 'ds_config_auto3.json',
    code: 'deepspeed.auto',
    severity: 'error',
    settings: { deepspeed: { launchedWith: 'huggingface' } },
    marked: '{"train_micro_batch_size_per_gpu": "auto", "steps_per_print": ⟪"auto"⟫}',
    clean: '{"train_micro_batch_size_per_gpu": "auto", "steps_per_print": 10}',
  },
  {
    name: '"auto" with the launcher unknown is a hint',
    file: 'ds_config_auto4.json',
    code: 'deepspeed.auto',
    severity: 'hint',
    marked: '{"train_micro_batch_size_per_gpu": ⟪"auto"⟫}',
    clean: '{"train_micro_batch_size_per_gpu": 2}',
  },
  {
    name: 'DeepSpeed: misspelled top-level key (ignored: a warning), with the rename',
    file: 'ds_config_typo.json',
    code: 'schema.unknown-key',
    severity: 'warning',
    fixes: 1,
    marked: '{"train_micro_batch_size_per_gpu": 1, ⟪"gradient_clipp1ng"⟫: 1.0}',
    clean: '{"train_micro_batch_size_per_gpu": 1, "gradient_clipping": 1.0}',
  },
  {
    name: 'DeepSpeed: unknown key inside zero_optimization (rejected: an error)',
    file: 'ds_config_zk.json',
    code: 'schema.unknown-key',
    severity: 'error',
    fixes: 1,
    marked: '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2, ⟪"overlap_com"⟫: true}}',
    clean: '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2, "overlap_comm": true}}',
  },
  {
    name: 'DeepSpeed: deprecated cpu_offload, switched to offload_optimizer',
    file: 'ds_config_dep.json',
    code: 'schema.deprecated',
    severity: 'warning',
    fixes: 1,
    marked:
      '{\n  "train_micro_batch_size_per_gpu": 1,\n  "zero_optimization": {\n    "stage": 2,\n    ⟪"cpu_offload"⟫: true\n  }\n}\n',
    clean:
      '{\n  "train_micro_batch_size_per_gpu": 1,\n  "zero_optimization": {\n    "stage": 2,\n    "offload_optimizer": {"device": "cpu"}\n  }\n}\n',
  },
  {
    name: 'DeepSpeed: a deprecated key and its replacement together',
    file: 'ds_config_dep2.json',
    code: 'schema.deprecated',
    severity: 'error',
    fixes: 1,
    marked:
      '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3, ⟪"stage3_gather_fp16_weights_on_model_save"⟫: true, "stage3_gather_16bit_weights_on_model_save": true}}',
    clean:
      '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": true}}',
  },
  {
    name: 'DeepSpeed: misspelled offload device, with the correction',
    file: 'ds_config_dev.json',
    code: 'schema.enum',
    severity: 'error',
    fixes: 1,
    marked:
      '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": ⟪"cpuu"⟫}}}',
    clean:
      '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}',
  },
  {
    name: 'DeepSpeed: a number given as a string',
    file: 'ds_config_str.json',
    code: 'schema.type',
    severity: 'error',
    marked: '{"train_micro_batch_size_per_gpu": ⟪"4"⟫}',
    clean: '{"train_micro_batch_size_per_gpu": 4}',
  },
  {
    name: 'DeepSpeed: a duplicate key',
    file: 'ds_config_dup.json',
    code: 'syntax',
    severity: 'error',
    marked: '{"train_micro_batch_size_per_gpu": 1, ⟪"train_micro_batch_size_per_gpu"⟫: 2}',
    clean: '{"train_micro_batch_size_per_gpu": 2}',
  },

  // ---- accelerate ----------------------------------------------------------------------------
  {
    name: 'missing distributed_type',
    file: 'accelerate_missing.yaml',
    code: 'accelerate.distributed-type',
    severity: 'error',
    marked: '⟪num_processes: 2\nmixed_precision: bf16⟫\n',
    clean: "distributed_type: 'NO'\nmixed_precision: bf16\n",
  },
  {
    name: 'unquoted mixed_precision: no (YAML 1.1)',
    file: 'accelerate_no.yaml',
    code: 'accelerate.yaml11-boolean',
    severity: 'error',
    fixes: 1,
    marked: "distributed_type: 'NO'\nmixed_precision: ⟪no⟫\n",
    clean: "distributed_type: 'NO'\nmixed_precision: 'no'\n",
  },
  {
    name: 'unquoted distributed_type: NO (YAML 1.1)',
    file: 'accelerate_NO.yaml',
    code: 'accelerate.yaml11-boolean',
    severity: 'warning',
    fixes: 1,
    marked: 'distributed_type: ⟪NO⟫\n',
    clean: 'distributed_type: "NO"\n',
  },
  {
    name: 'num_processes -1',
    file: 'accelerate_np.yaml',
    code: 'accelerate.num-processes',
    severity: 'warning',
    marked: 'distributed_type: MULTI_GPU\nnum_processes: ⟪-1⟫\n',
    clean: 'distributed_type: MULTI_GPU\nnum_processes: 4\n',
  },
  {
    name: 'MULTI_GPU with one process',
    file: 'accelerate_np1.yaml',
    code: 'accelerate.num-processes',
    severity: 'warning',
    fixes: 1,
    marked: 'distributed_type: MULTI_GPU\nnum_processes: ⟪1⟫\n',
    clean: 'distributed_type: MULTI_GPU\nnum_processes: 2\n',
  },
  {
    name: 'several machines without the main process address',
    file: 'accelerate_nodes.yaml',
    code: 'accelerate.multi-node-address',
    severity: 'error',
    marked: 'distributed_type: MULTI_GPU\nnum_machines: ⟪2⟫\nnum_processes: 8\nmain_process_port: 29500\n',
    clean:
      'distributed_type: MULTI_GPU\nnum_machines: 2\nnum_processes: 8\nmain_process_ip: 10.0.0.1\nmain_process_port: 29500\n',
  },
  {
    name: 'processes not divisible by machines',
    file: 'accelerate_div.yaml',
    code: 'accelerate.processes-per-machine',
    severity: 'error',
    fixes: 2,
    marked:
      'distributed_type: MULTI_GPU\nnum_machines: 2\nnum_processes: ⟪7⟫\nmain_process_ip: 10.0.0.1\nmain_process_port: 29500\n',
    clean:
      'distributed_type: MULTI_GPU\nnum_machines: 2\nnum_processes: 8\nmain_process_ip: 10.0.0.1\nmain_process_port: 29500\n',
  },
  {
    name: 'cpu-RAM-efficient loading without syncing module states',
    file: 'accelerate_ram.yaml',
    code: 'accelerate.cpu-ram-efficient-loading',
    severity: 'error',
    fixes: 1,
    marked:
      'distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_cpu_ram_efficient_loading: true\n  fsdp_sync_module_states: ⟪false⟫\n',
    clean:
      'distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_cpu_ram_efficient_loading: false\n  fsdp_sync_module_states: false\n',
  },
  {
    name: 'FSDP2 with a sharding strategy as reshard_after_forward',
    file: 'accelerate_v2.yaml',
    code: 'accelerate.fsdp-version-option',
    severity: 'error',
    fixes: 1,
    marked:
      'distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_version: 2\n  fsdp_reshard_after_forward: ⟪FULL_SHARD⟫\n',
    clean:
      'distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_version: 2\n  fsdp_reshard_after_forward: true\n',
  },
  {
    name: 'FSDP2 with LOCAL_STATE_DICT',
    file: 'accelerate_v2sd.yaml',
    code: 'accelerate.fsdp-version-option',
    severity: 'error',
    fixes: 1,
    marked:
      'distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_version: 2\n  fsdp_state_dict_type: ⟪LOCAL_STATE_DICT⟫\n',
    clean:
      'distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_version: 1\n  fsdp_state_dict_type: LOCAL_STATE_DICT\n',
  },
  {
    name: 'FSDP2 with forward prefetch and a sharding strategy',
    file: 'accelerate_v2fp.yaml',
    code: 'accelerate.fsdp-version-option',
    severity: 'warning',
    fixes: 1,
    marked:
      'distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_version: 2\n  ⟪fsdp_sharding_strategy⟫: FULL_SHARD\n  ⟪fsdp_forward_prefetch⟫: true\n',
    clean:
      'distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_version: 2\n  fsdp_reshard_after_forward: true\n  fsdp_forward_prefetch: false\n',
  },
  {
    name: 'FSDP1 with fsdp_reshard_after_forward',
    file: 'accelerate_v1r.yaml',
    code: 'accelerate.fsdp-version-option',
    severity: 'warning',
    marked: 'distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  ⟪fsdp_reshard_after_forward⟫: false\n',
    clean: 'distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_sharding_strategy: SHARD_GRAD_OP\n',
  },
  {
    name: 'HYBRID_SHARD with NO_WRAP',
    file: 'accelerate_hsdp.yaml',
    code: 'accelerate.hybrid-shard-no-wrap',
    severity: 'error',
    fixes: 1,
    marked:
      'distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_sharding_strategy: HYBRID_SHARD\n  fsdp_auto_wrap_policy: ⟪NO_WRAP⟫\n',
    clean:
      'distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_sharding_strategy: HYBRID_SHARD\n  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n',
  },
  {
    name: 'SIZE_BASED_WRAP with min_num_params 0',
    file: 'accelerate_size.yaml',
    code: 'accelerate.size-wrap-min-params',
    severity: 'warning',
    fixes: 1,
    marked:
      'distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_auto_wrap_policy: SIZE_BASED_WRAP\n  fsdp_min_num_params: ⟪0⟫\n',
    clean:
      'distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_auto_wrap_policy: SIZE_BASED_WRAP\n  fsdp_min_num_params: 1000000\n',
  },
  {
    name: 'deepspeed_config_file together with the fields it overrides',
    file: 'accelerate_over.yaml',
    code: 'accelerate.deepspeed-file-overrides',
    severity: 'error',
    fixes: 1,
    marked:
      'distributed_type: DEEPSPEED\nnum_processes: 8\ndeepspeed_config:\n  deepspeed_config_file: ds_bf16.json\n  ⟪zero_stage⟫: 2\n',
    clean: 'distributed_type: DEEPSPEED\nnum_processes: 8\ndeepspeed_config:\n  deepspeed_config_file: ds_bf16.json\n',
  },
  {
    name: "mixed_precision against the DeepSpeed file's bf16",
    file: 'accelerate_mp.yaml',
    code: 'accelerate.deepspeed-file-overrides',
    severity: 'error',
    fixes: 1,
    marked:
      'distributed_type: DEEPSPEED\n⟪mixed_precision⟫: fp16\nnum_processes: 8\ndeepspeed_config:\n  deepspeed_config_file: ds_bf16.json\n',
    clean: 'distributed_type: DEEPSPEED\nnum_processes: 8\ndeepspeed_config:\n  deepspeed_config_file: ds_bf16.json\n',
  },
  {
    name: 'zero3_init_flag with stage 2 (from the DeepSpeed file)',
    file: 'accelerate_z3.yaml',
    code: 'accelerate.zero3-init-flag',
    severity: 'warning',
    fixes: 1,
    marked:
      'distributed_type: DEEPSPEED\nnum_processes: 8\ndeepspeed_config:\n  deepspeed_config_file: ds_bf16.json\n  zero3_init_flag: ⟪true⟫\n',
    clean:
      'distributed_type: DEEPSPEED\nnum_processes: 8\ndeepspeed_config:\n  deepspeed_config_file: ds_stage3.json\n  zero3_init_flag: true\n',
  },
  {
    name: 'zero3_init_flag with zero_stage 2',
    file: 'accelerate_z3b.yaml',
    code: 'accelerate.zero3-init-flag',
    severity: 'warning',
    fixes: 1,
    marked:
      'distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n  zero_stage: 2\n  zero3_init_flag: ⟪true⟫\n',
    clean:
      'distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n  zero_stage: 3\n  zero3_init_flag: true\n',
  },
  {
    name: 'offload_param_device at zero_stage 2 (as offload_param in a ds_config)',
    file: 'accelerate_op.yaml',
    code: 'accelerate.offload-ignored',
    severity: 'warning',
    fixes: 1,
    marked:
      'distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n  zero_stage: 2\n  offload_param_device: ⟪cpu⟫\n',
    clean:
      'distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n  zero_stage: 3\n  offload_param_device: cpu\n',
  },
  {
    name: "NVMe optimizer offload at accelerate's default stage 2",
    file: 'accelerate_nv.yaml',
    code: 'accelerate.offload-ignored',
    severity: 'warning',
    fixes: 1,
    marked:
      'distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n  offload_optimizer_device: ⟪nvme⟫\n  offload_optimizer_nvme_path: /nvme\n',
    clean: 'distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n  offload_optimizer_device: cpu\n',
  },
  {
    name: 'the DeepSpeed file: no zero_optimization, batch against num_processes',
    file: 'accelerate_ref.yaml',
    code: 'accelerate.deepspeed-file',
    severity: 'error',
    marked:
      'distributed_type: DEEPSPEED\nnum_processes: 4\ndeepspeed_config:\n  deepspeed_config_file: ⟪ds_no_zero.json⟫\n',
    clean: 'distributed_type: DEEPSPEED\nnum_processes: 8\ndeepspeed_config:\n  deepspeed_config_file: ds_bf16.json\n',
  },
  {
    name: "the DeepSpeed file's train_batch_size against num_processes",
    file: 'accelerate_ref2.yaml',
    code: 'accelerate.deepspeed-file',
    severity: 'error',
    marked:
      'distributed_type: DEEPSPEED\nnum_processes: 4\ndeepspeed_config:\n  deepspeed_config_file: ⟪ds_bf16.json⟫\n',
    clean: 'distributed_type: DEEPSPEED\nnum_processes: 8\ndeepspeed_config:\n  deepspeed_config_file: ds_bf16.json\n',
  },
  {
    name: 'accelerate: unknown top-level key (rejected: an error)',
    file: 'accelerate_top.yaml',
    code: 'schema.unknown-key',
    severity: 'error',
    fixes: 1,
    marked: "distributed_type: 'NO'\n⟪mixed_precison⟫: bf16\n",
    clean: "distributed_type: 'NO'\nmixed_precision: bf16\n",
  },
  {
    name: 'accelerate: unknown key in fsdp_config (ignored: a warning)',
    file: 'accelerate_fk.yaml',
    code: 'schema.unknown-key',
    severity: 'warning',
    fixes: 1,
    marked: 'distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  ⟪fsdp_offload_param⟫: true\n',
    clean: 'distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  offload_params: true\n',
  },
  {
    name: 'accelerate: the old fsdp_backward_prefetch_policy',
    file: 'accelerate_dep.yaml',
    code: 'schema.deprecated',
    severity: 'warning',
    fixes: 1,
    marked: 'distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  ⟪fsdp_backward_prefetch_policy⟫: BACKWARD_PRE\n',
    clean: 'distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_backward_prefetch: BACKWARD_PRE\n',
  },
  ...TORCHTITAN_RULE_CASES,
  ...HF_TRAINING_RULE_CASES,
];
