// Run config rules about ranks and sharding: what a strategy does with the world size it gets.
import { asNumber, isObject, report, valueAt, type ConfigRule, type RuleContext } from '../rule';

/** Ranks in the run: launch.nproc_per_node × launch.nnodes (schema defaults 1 and 1). */
export function worldSize(ctx: RuleContext): number | undefined {
  const perNode = valueAt(ctx.value, ['launch', 'nproc_per_node']) ?? 1;
  const nodes = valueAt(ctx.value, ['launch', 'nnodes']) ?? 1;
  return typeof perNode === 'number' && typeof nodes === 'number' ? perNode * nodes : undefined;
}

const STRATEGIES = ['NO_SHARD', 'SHARD_OPTIMIZER', 'SHARD_GRAD_OP', 'FULL_SHARD', 'HYBRID_SHARD'];

/** The sharding strategy the config asks for explicitly (sharding_strategy or zero_stage), if any. */
function explicitStrategy(ctx: RuleContext): { strategy: string; path: string[] } | undefined {
  const fsdp = ctx.value.fsdp;
  if (!isObject(fsdp)) return undefined;
  // An unknown name is the schema's to report; only real strategies behave as anything.
  if (typeof fsdp.sharding_strategy === 'string')
    return STRATEGIES.includes(fsdp.sharding_strategy)
      ? { strategy: fsdp.sharding_strategy, path: ['fsdp', 'sharding_strategy'] }
      : undefined;
  const stage = asNumber(fsdp.zero_stage);
  return stage !== undefined && Number.isInteger(stage) && stage >= 0 && stage <= 3
    ? { strategy: STRATEGIES[stage], path: ['fsdp', 'zero_stage'] }
    : undefined;
}

export const shardingWithOneRank: ConfigRule = {
  code: 'run.sharding-one-rank',
  why: 'Sharding divides state across ranks; with a world size of 1 every shard is the whole model and the run behaves as NO_SHARD (PyTorch FSDP switches to NO_SHARD with a warning for the same reason).',
  source:
    'torch/distributed/fsdp/_init_utils.py (its warning "FSDP is switching to use NO_SHARD instead of ... since the world size is 1")',
  check(ctx) {
    const s = explicitStrategy(ctx);
    if (!s || s.strategy === 'NO_SHARD' || worldSize(ctx) !== 1) return [];
    return [
      report(ctx, this, {
        path: s.path,
        severity: 'warning',
        message: `${s.strategy} with a world size of 1 behaves as NO_SHARD: raise launch.nproc_per_node or launch.nnodes to shard`,
        fixes: [
          {
            title: 'Set sharding_strategy: NO_SHARD',
            edits:
              s.path[1] === 'zero_stage'
                ? [{ kind: 'set', path: ['fsdp', 'zero_stage'], value: 0 }]
                : [{ kind: 'set', path: s.path, value: 'NO_SHARD' }],
          },
        ],
      }),
    ];
  },
};

export const hybridShardOneNode: ConfigRule = {
  code: 'run.hybrid-one-node',
  why: 'HYBRID_SHARD shards within a node and replicates across nodes; with one node (and no smaller fsdp.ranks_per_node) there is one shard group and it behaves as FULL_SHARD.',
  source:
    'core/schemas/run-config.schema.json (FsdpConfig.sharding_strategy, ranks_per_node); torch.distributed.fsdp.ShardingStrategy.HYBRID_SHARD',
  check(ctx) {
    const fsdp = ctx.value.fsdp;
    if (!isObject(fsdp) || fsdp.sharding_strategy !== 'HYBRID_SHARD') return [];
    const nodes = asNumber(valueAt(ctx.value, ['launch', 'nnodes'])) ?? 1;
    const perNode = asNumber(valueAt(ctx.value, ['launch', 'nproc_per_node'])) ?? 1;
    const group = asNumber(fsdp.ranks_per_node);
    const world = nodes * perNode;
    if (group !== undefined && world % group !== 0) {
      return [
        report(ctx, this, {
          path: ['fsdp', 'ranks_per_node'],
          severity: 'error',
          message: `ranks_per_node ${group} does not divide the world size ${world} into whole shard groups`,
        }),
      ];
    }
    if (nodes > 1 || (group !== undefined && group < world)) return [];
    return [
      report(ctx, this, {
        path: ['fsdp', 'sharding_strategy'],
        severity: 'warning',
        message:
          'HYBRID_SHARD on one node behaves as FULL_SHARD: there is only one shard group (set launch.nnodes, or fsdp.ranks_per_node to emulate nodes)',
        fixes: [
          {
            title: 'Use FULL_SHARD',
            edits: [{ kind: 'set', path: ['fsdp', 'sharding_strategy'], value: 'FULL_SHARD' }],
          },
        ],
      }),
    ];
  },
};

export const accumulationWithCpuOffload: ConfigRule = {
  code: 'run.accumulation-cpu-offload',
  why: 'With CPU offload the gradients of each micro-step are reduced and moved to host memory; PyTorch FSDP does not support gradient accumulation outside no_sync() with CPU offload (it would use the newly reduced gradient instead of accumulating), and every micro-step pays the device-to-host copy.',
  source:
    'torch/distributed/fsdp/fully_sharded_data_parallel.py: FullyShardedDataParallel (class docstring, CPU offload and gradient accumulation)',
  check(ctx) {
    const gas = asNumber(valueAt(ctx.value, ['training', 'gradient_accumulation_steps']));
    if (valueAt(ctx.value, ['fsdp', 'cpu_offload']) !== true || gas === undefined || gas <= 1) return [];
    return [
      report(ctx, this, {
        path: ['training', 'gradient_accumulation_steps'],
        severity: 'warning',
        message: `gradient accumulation (${gas} steps) with fsdp.cpu_offload: each micro-step's gradients are reduced and copied to the host; prefer a larger batch_size_per_gpu or turn offload off`,
      }),
    ];
  },
};
