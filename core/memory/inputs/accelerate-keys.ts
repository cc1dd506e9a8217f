// What each accelerate config key does to the estimate (./key-effects.ts; the reader is
// ./from-accelerate.ts, the names ./not-modelled.ts accelerateNotModelled). Paths are the schema's
// (core/schemas/accelerate-config.schema.json).
import type { KeyTable } from './key-effects';

const FC = 'fsdp_config';
const DC = 'deepspeed_config';
const PC = 'parallelism_config';

export const ACCELERATE_KEYS: KeyTable = {
  modelled: [
    'distributed_type',
    'mixed_precision',
    'num_processes',
    'num_machines',
    `${DC}.deepspeed_config_file`,
    `${DC}.zero_stage`,
    `${DC}.offload_optimizer_device`,
    `${DC}.offload_param_device`,
    `${DC}.gradient_accumulation_steps`,
    `${FC}.fsdp_version`,
    `${FC}.fsdp_sharding_strategy`,
    `${FC}.fsdp_reshard_after_forward`,
    `${FC}.fsdp_offload_params`,
    `${FC}.fsdp_transformer_layer_cls_to_wrap`,
    `${FC}.fsdp_backward_prefetch`,
    `${FC}.fsdp_forward_prefetch`,
    `${FC}.fsdp_activation_checkpointing`,
  ],
  notModelled: {
    'dynamo_config.dynamo_backend': { example: 'INDUCTOR' },
    dynamo_backend: { example: 'INDUCTOR' },
    [`${PC}.parallelism_config_tp_size`]: { example: 2, what: 'tensor parallelism', effect: 'lowers' },
    [`${PC}.parallelism_config_cp_size`]: { example: 2, what: 'context parallelism', effect: 'lowers' },
    [`${PC}.parallelism_config_sp_size`]: { example: 2, what: 'sequence parallelism', effect: 'lowers' },
    // FSDP2's shard group within the replicas (HSDP): more memory per GPU than sharding over all of them.
    [`${PC}.parallelism_config_dp_shard_size`]: { example: 2, what: 'the FSDP shard group size', effect: 'either' },
    [`${FC}.fsdp_ignored_modules`]: { example: 'lm_head', what: 'modules FSDP leaves unsharded', effect: 'either' },
    megatron_lm_config: { example: { megatron_lm_tp_degree: 2 }, what: 'Megatron-LM', effect: 'either' },
    // The old spelling of mixed_precision: fp16 (accelerate still reads it).
    fp16: { example: true, what: 'fp16 (the old key)', effect: 'lowers' },
  },
  none: [
    [
      'only with mixed_precision: fp8, which is named itself',
      [
        'fp8_config.backend',
        'fp8_config.use_autocast_during_eval',
        'fp8_config.margin',
        'fp8_config.interval',
        'fp8_config.fp8_format',
        'fp8_config.amax_history_len',
        'fp8_config.amax_compute_algo',
        'fp8_config.override_linear_precision',
        'fp8_config.opt_level',
        'fp8_config.enable_fsdp_float8_all_gather',
        'fp8_config.pad_inner_dim',
      ],
    ],
    [
      'only with a dynamo backend, which is named itself',
      [
        'dynamo_config.dynamo_mode',
        'dynamo_config.dynamo_use_fullgraph',
        'dynamo_config.dynamo_use_dynamic',
        'dynamo_config.dynamo_use_regional_compilation',
      ],
    ],
    [
      'DeepSpeed launch details, NVMe paths and saving: not the GPU tensors of a step',
      [
        `${DC}.offload_optimizer_nvme_path`,
        `${DC}.offload_param_nvme_path`,
        `${DC}.gradient_clipping`,
        `${DC}.zero3_init_flag`,
        `${DC}.zero3_save_16bit_model`,
        `${DC}.deepspeed_hostfile`,
        `${DC}.deepspeed_exclusion_filter`,
        `${DC}.deepspeed_inclusion_filter`,
        `${DC}.deepspeed_multinode_launcher`,
        `${DC}.deepspeed_moe_layer_cls_names`,
      ],
    ],
    [
      // The estimate shards per decoder block, as the transformer-based policy does with the layer class;
      // a size-based policy's units are of similar size. The old prefetch spelling moves one unit's
      // gathered parameters at most.
      "FSDP's loading, saving and wrapping details: the per-block units and prefetch the estimate models",
      [
        `${FC}.fsdp_min_num_params`,
        `${FC}.fsdp_auto_wrap_policy`,
        `${FC}.fsdp_backward_prefetch_policy`,
        `${FC}.fsdp_state_dict_type`,
        `${FC}.fsdp_use_orig_params`,
        `${FC}.fsdp_cpu_ram_efficient_loading`,
        `${FC}.fsdp_sync_module_states`,
      ],
    ],
    [
      'replicas hold what one does; the other settings only with a context or sequence parallel size, which is named itself',
      [
        `${PC}.parallelism_config_dp_replicate_size`,
        `${PC}.parallelism_config_cp_backend`,
        `${PC}.parallelism_config_cp_comm_strategy`,
        `${PC}.parallelism_config_sp_backend`,
        `${PC}.parallelism_config_sp_seq_length`,
        `${PC}.parallelism_config_sp_seq_length_is_variable`,
        `${PC}.parallelism_config_sp_attn_implementation`,
      ],
    ],
    [
      'where and how the processes are launched (machines, addresses, TPU, SageMaker), not what a GPU holds',
      [
        'compute_environment',
        'use_cpu',
        'debug',
        'machine_rank',
        'gpu_ids',
        'main_process_ip',
        'main_process_port',
        'rdzv_backend',
        'same_network',
        'main_training_function',
        'enable_cpu_affinity',
        'downcast_bf16',
        'mpirun_config',
        'tpu_name',
        'tpu_zone',
        'tpu_use_cluster',
        'tpu_use_sudo',
        'command_file',
        'commands',
        'tpu_vm',
        'tpu_env',
        'ec2_instance_type',
        'iam_role_name',
        'image_uri',
        'profile',
        'region',
        'base_job_name',
        'pytorch_version',
        'transformers_version',
        'py_version',
        'sagemaker_inputs_file',
        'sagemaker_metrics_file',
        'additional_args',
      ],
    ],
  ],
};
