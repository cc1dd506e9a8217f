// What each key of a torchtitan job config (TOML, torchtitan 0.2.x) does to the estimate
// (./key-effects.ts; the reader is ./from-torchtitan.ts, the names ./not-modelled.ts
// torchtitanNotModelled). Paths are the schema's (core/schemas/torchtitan-config.schema.json).
import type { KeyTable } from './key-effects';

const P = 'parallelism';

export const TORCHTITAN_KEYS: KeyTable = {
  modelled: [
    'model.name',
    'model.flavor',
    'training.local_batch_size',
    'training.seq_len',
    'training.dtype',
    'training.mixed_precision_param',
    `${P}.data_parallel_replicate_degree`,
    `${P}.data_parallel_shard_degree`,
    `${P}.fsdp_reshard_after_forward`,
    `${P}.tensor_parallel_degree`,
    `${P}.context_parallel_degree`,
    `${P}.pipeline_parallel_degree`,
    `${P}.pipeline_parallel_schedule`,
    `${P}.pipeline_parallel_microbatch_size`,
    `${P}.pipeline_parallel_layers_per_stage`,
    `${P}.expert_parallel_degree`,
    `${P}.expert_tensor_parallel_degree`,
    'activation_checkpoint.mode',
    'activation_checkpoint.selective_ac_option',
  ],
  notModelled: {
    // float8 is estimated as bf16 (a note says so); other converters (mx) are named.
    'model.converters': { example: ['mx'] },
    'compile.enable': { example: true, what: 'torch.compile', effect: 'either' },
    'training.enable_cpu_offload': { example: true, what: 'CPU offload', effect: 'lowers' },
    // Each parameter is stepped in its gradient's hook and the gradient freed: no full set of gradients.
    'optimizer.early_step_in_backward': { example: true, what: 'the optimizer step in backward', effect: 'lowers' },
    'activation_checkpoint.memory_budget': { example: 0.3, what: "checkpointing's memory budget", effect: 'either' },
    // Without loss parallel each tensor-parallel rank holds the whole logits.
    [`${P}.disable_loss_parallel`]: { example: true, what: 'loss parallel off', effect: 'either' },
    [`${P}.module_fqns_per_model_part`]: { example: [['tok_embeddings']], what: 'a stage layout', effect: 'either' },
    [`${P}.pipeline_parallel_first_stage_less_layers`]: { example: 2, what: 'a stage layout', effect: 'either' },
    [`${P}.pipeline_parallel_last_stage_less_layers`]: { example: 2, what: 'a stage layout', effect: 'either' },
    [`${P}.pipeline_parallel_schedule_csv`]: {
      example: 'schedule.csv',
      what: 'a pipeline schedule from CSV',
      effect: 'either',
    },
    // DiLoCo / local SGD keep the outer optimizer's states and a copy of the weights.
    'fault_tolerance.semi_sync_method': { example: 'diloco', what: 'semi-synchronous training', effect: 'either' },
    'experimental.custom_import': { example: 'my_model', what: 'a custom module', effect: 'either' },
    'experimental.custom_args_module': { example: 'my_args', what: 'a custom module', effect: 'either' },
    'validation.local_batch_size': {
      example: 32,
      what: 'the validation batch (its forward pass is not estimated)',
      effect: 'either',
    },
  },
  none: [
    [
      "AdamW's and Adam's hyper-parameters and the schedule: two states whatever their values (the two optimizers torchtitan builds)",
      [
        'optimizer.name',
        'optimizer.lr',
        'optimizer.beta1',
        'optimizer.beta2',
        'optimizer.eps',
        'optimizer.weight_decay',
        'optimizer.implementation',
        'lr_scheduler',
        'training.max_norm',
      ],
    ],
    [
      // global_batch_size above local × data-parallel degree accumulates gradients the step holds anyway.
      "the data, the number of steps, gradient accumulation and Python's garbage collector: not the step's tensors",
      [
        'training.dataset',
        'training.dataset_path',
        'training.global_batch_size',
        'training.steps',
        'training.gc_freq',
        'training.gc_debug',
        'training.dataloader',
        'model.hf_assets_path',
        'model.tokenizer_path',
        'model.print_after_conversion',
      ],
    ],
    ['reduce-scatter in bf16 halves the reduce buffers, a few % of the step', ['training.mixed_precision_reduce']],
    [
      'only with a converter or torch.compile, estimated (float8 as bf16) or named themselves',
      ['quantize', 'compile.components', 'compile.backend', `${P}.enable_async_tensor_parallel`],
    ],
    [
      'how the parallel groups communicate and balance: the same shards',
      [
        `${P}.pipeline_parallel_expert_parallel_overlap`,
        `${P}.context_parallel_load_balancer`,
        `${P}.context_parallel_rotate_method`,
        `${P}.expert_parallel_comm_backend`,
        'comm',
      ],
    ],
    [
      "activation checkpointing's checks and options within the mode the estimate models",
      [
        'activation_checkpoint.per_op_sac_force_recompute_mm_shapes_by_fqns',
        'activation_checkpoint.early_stop',
        'activation_checkpoint.visualize_memory_budget_pareto',
        'activation_checkpoint.preserve_rng_state',
        'activation_checkpoint.determinism_check',
        'activation_checkpoint.debug',
      ],
    ],
    ['saving and loading checkpoints (async saves stage in pinned host memory), outside the step', ['checkpoint']],
    [
      'the job, profiling, metrics, memory estimation tools, fault-tolerance groups, validation schedule and debugging switches',
      [
        'job',
        'profiling',
        'metrics',
        'memory_estimation',
        'fault_tolerance.enable',
        'fault_tolerance.process_group',
        'fault_tolerance.process_group_timeout_ms',
        'fault_tolerance.replica_id',
        'fault_tolerance.group_size',
        'fault_tolerance.min_replica_size',
        'validation.enable',
        'validation.dataset',
        'validation.dataset_path',
        'validation.seq_len',
        'validation.freq',
        'validation.steps',
        'validation.dataloader',
        'debug',
      ],
    ],
  ],
};
