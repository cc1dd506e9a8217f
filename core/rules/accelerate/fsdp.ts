// accelerate FSDP plugin rules. accelerate copies fsdp_config onto --fsdp_* launch arguments, the
// launcher exports them as FSDP_* environment variables, and FullyShardedDataParallelPlugin reads
// them back, differently for FSDP1 and FSDP2 (accelerate/utils/launch.py: prepare_multi_gpu_env;
// accelerate/utils/dataclasses.py: FullyShardedDataParallelPlugin.__post_init__).
import type { ConfigProblem } from '../../config/schema-problems';
import { isObject, report, type ConfigRule, type RuleContext } from '../rule';

const FSDP = 'fsdp_config';

/** fsdp_config with accelerate's prefixing applied: `version` is read as `fsdp_version`. */
function fsdpOptions(ctx: RuleContext): { get(key: string): unknown; keyOf(key: string): string } | undefined {
  const section = ctx.value[FSDP];
  if (!isObject(section)) return undefined;
  const keyOf = (key: string) =>
    key in section || !(key.replace(/^fsdp_/, '') in section) ? key : key.replace(/^fsdp_/, '');
  return { get: (key) => section[keyOf(key)], keyOf };
}

function fsdpVersion(ctx: RuleContext): 1 | 2 {
  const v = fsdpOptions(ctx)?.get('fsdp_version');
  return v === 2 || v === '2' ? 2 : 1;
}

const HYBRID = ['HYBRID_SHARD', 'HYBRID_SHARD_ZERO2', 4, 5];
// FSDP2's reshard_after_forward is a boolean; the FSDP1 strategies it replaces map onto it.
const RESHARDS: Record<string, boolean> = {
  FULL_SHARD: true,
  HYBRID_SHARD: true,
  SHARD_GRAD_OP: false,
  NO_SHARD: false,
  HYBRID_SHARD_ZERO2: false,
  '1': true,
  '2': false,
  '3': false,
  '4': true,
  '5': false,
};

export const cpuRamEfficientLoading: ConfigRule = {
  code: 'accelerate.cpu-ram-efficient-loading',
  why: 'With cpu-RAM-efficient loading only rank 0 loads the weights and the others must receive them by broadcast: accelerate launch raises "When using `--fsdp_cpu_ram_efficient_loading` set `--fsdp_sync_module_states` to `True`".',
  source: 'accelerate/utils/launch.py: prepare_multi_gpu_env',
  check(ctx) {
    const fsdp = fsdpOptions(ctx);
    if (!fsdp || fsdp.get('fsdp_cpu_ram_efficient_loading') !== true || fsdp.get('fsdp_sync_module_states') !== false)
      return [];
    const key = fsdp.keyOf('fsdp_sync_module_states');
    return [
      report(ctx, this, {
        path: [FSDP, key],
        severity: 'error',
        message:
          'fsdp_cpu_ram_efficient_loading needs fsdp_sync_module_states: true (the other ranks get the weights by broadcast from rank 0)',
        fixes: [
          {
            title: 'Set fsdp_sync_module_states: true',
            preferred: true,
            edits: [{ kind: 'set', path: [FSDP, key], value: true }],
          },
        ],
      }),
    ];
  },
};

export const fsdpVersionOptions: ConfigRule = {
  code: 'accelerate.fsdp-version-option',
  why: 'FSDP2 (fully_shard) takes a boolean reshard_after_forward instead of a sharding strategy, has no LOCAL_STATE_DICT, and ignores forward/backward prefetch, use_orig_params and sync_module_states; FSDP1 launched from a config always takes fsdp_sharding_strategy and ignores fsdp_reshard_after_forward.',
  source:
    'accelerate/utils/dataclasses.py: FullyShardedDataParallelPlugin.__post_init__, set_state_dict_type; accelerate/utils/launch.py: prepare_multi_gpu_env (FSDP_SHARDING_STRATEGY is always exported)',
  check(ctx) {
    const fsdp = fsdpOptions(ctx);
    if (!fsdp) return [];
    const at = (key: string) => [FSDP, fsdp.keyOf(key)];
    const present = (key: string) => fsdp.get(key) !== undefined && fsdp.get(key) !== null;
    const problems: ConfigProblem[] = [];
    if (fsdpVersion(ctx) === 2) {
      const reshard = fsdp.get('fsdp_reshard_after_forward');
      if (
        present('fsdp_reshard_after_forward') &&
        typeof reshard !== 'boolean' &&
        !/^(true|false)$/i.test(String(reshard))
      ) {
        const mapped = RESHARDS[String(reshard).toUpperCase()];
        problems.push(
          report(ctx, this, {
            path: at('fsdp_reshard_after_forward'),
            severity: 'error',
            message: `FSDP2 needs a boolean fsdp_reshard_after_forward, got ${JSON.stringify(reshard)}${mapped !== undefined ? ` (${reshard} corresponds to ${mapped})` : ''}`,
            fixes:
              mapped !== undefined
                ? [
                    {
                      title: `Set fsdp_reshard_after_forward: ${mapped}`,
                      preferred: true,
                      edits: [{ kind: 'set', path: at('fsdp_reshard_after_forward'), value: mapped }],
                    },
                  ]
                : undefined,
          }),
        );
      }
      if (fsdp.get('fsdp_state_dict_type') === 'LOCAL_STATE_DICT') {
        problems.push(
          report(ctx, this, {
            path: at('fsdp_state_dict_type'),
            severity: 'error',
            message: 'FSDP2 does not support LOCAL_STATE_DICT; use SHARDED_STATE_DICT or FULL_STATE_DICT',
            fixes: [
              {
                title: 'Use SHARDED_STATE_DICT',
                preferred: true,
                edits: [{ kind: 'set', path: at('fsdp_state_dict_type'), value: 'SHARDED_STATE_DICT' }],
              },
            ],
          }),
        );
      }
      const strategy = fsdp.get('fsdp_sharding_strategy');
      if (present('fsdp_sharding_strategy')) {
        const mapped = RESHARDS[String(strategy).toUpperCase()];
        const fixes =
          mapped !== undefined && !present('fsdp_reshard_after_forward')
            ? [
                {
                  title: `Replace with fsdp_reshard_after_forward: ${mapped}`,
                  preferred: true,
                  edits: [
                    { kind: 'set' as const, path: [FSDP, 'fsdp_reshard_after_forward'], value: mapped },
                    { kind: 'remove' as const, path: at('fsdp_sharding_strategy') },
                  ],
                },
              ]
            : [
                {
                  title: 'Remove fsdp_sharding_strategy',
                  edits: [{ kind: 'remove' as const, path: at('fsdp_sharding_strategy') }],
                },
              ];
        problems.push(
          report(ctx, this, {
            path: at('fsdp_sharding_strategy'),
            part: 'key',
            severity: 'warning',
            message:
              'FSDP2 ignores fsdp_sharding_strategy; it uses fsdp_reshard_after_forward (true like FULL_SHARD, false like SHARD_GRAD_OP)',
            fixes,
          }),
        );
      }
      for (const [key, what] of [
        ['fsdp_forward_prefetch', 'is not implemented in FSDP2'],
        ['fsdp_backward_prefetch', 'is not supported in FSDP2'],
        ['fsdp_use_orig_params', 'is obsolete in FSDP2 (it always uses the original parameters)'],
        ['fsdp_sync_module_states', 'is obsolete in FSDP2'],
      ] as const) {
        const v = fsdp.get(key);
        const meaningful = key === 'fsdp_backward_prefetch' ? present(key) && v !== 'NO_PREFETCH' : v === true;
        if (meaningful)
          problems.push(
            report(ctx, this, {
              path: at(key),
              part: 'key',
              severity: 'warning',
              message: `${key} ${what}; FSDP2 ignores it`,
              fixes: [{ title: `Remove ${key}`, preferred: true, edits: [{ kind: 'remove', path: at(key) }] }],
            }),
          );
      }
    } else if (present('fsdp_reshard_after_forward')) {
      problems.push(
        report(ctx, this, {
          path: at('fsdp_reshard_after_forward'),
          part: 'key',
          severity: 'warning',
          message: `FSDP1 ignores fsdp_reshard_after_forward when launched from a config: fsdp_sharding_strategy (default FULL_SHARD) decides; set fsdp_version: 2 to use it`,
        }),
      );
    }
    return problems;
  },
};

export const hybridShardNeedsWrapping: ConfigRule = {
  code: 'accelerate.hybrid-shard-no-wrap',
  why: 'HYBRID_SHARD builds intra- and inter-node process groups per FSDP unit; without an auto-wrap policy (NO_WRAP) PyTorch raises "Manual wrapping with ShardingStrategy.HYBRID_SHARD requires explicit specification of process group or device_mesh".',
  source: 'torch/distributed/fsdp/_init_utils.py: _init_process_group_state',
  check(ctx) {
    const fsdp = fsdpOptions(ctx);
    if (!fsdp || fsdpVersion(ctx) !== 1 || !HYBRID.includes(fsdp.get('fsdp_sharding_strategy') as string)) return [];
    const policy = fsdp.get('fsdp_auto_wrap_policy');
    if (policy !== undefined && policy !== null && policy !== 'NO_WRAP') return [];
    const where =
      policy === 'NO_WRAP' ? [FSDP, fsdp.keyOf('fsdp_auto_wrap_policy')] : [FSDP, fsdp.keyOf('fsdp_sharding_strategy')];
    return [
      report(ctx, this, {
        path: where,
        severity: 'error',
        message: `${String(fsdp.get('fsdp_sharding_strategy'))} needs an auto-wrap policy; with ${policy === 'NO_WRAP' ? 'NO_WRAP' : 'no fsdp_auto_wrap_policy (NO_WRAP)'} PyTorch refuses to build the hybrid process groups`,
        fixes: [
          {
            title: 'Use TRANSFORMER_BASED_WRAP',
            preferred: true,
            edits: [
              { kind: 'set', path: [FSDP, fsdp.keyOf('fsdp_auto_wrap_policy')], value: 'TRANSFORMER_BASED_WRAP' },
            ],
          },
        ],
      }),
    ];
  },
};

export const sizeBasedWrapMinimum: ConfigRule = {
  code: 'accelerate.size-wrap-min-params',
  why: 'size_based_auto_wrap_policy wraps every module with at least min_num_params unwrapped parameters; with 0 every single module, down to each LayerNorm, becomes its own FSDP unit with its own all-gathers.',
  source:
    'torch/distributed/fsdp/wrap.py: size_based_auto_wrap_policy; accelerate/utils/dataclasses.py: FullyShardedDataParallelPlugin (min_num_params)',
  check(ctx) {
    const fsdp = fsdpOptions(ctx);
    if (!fsdp || fsdp.get('fsdp_auto_wrap_policy') !== 'SIZE_BASED_WRAP' || fsdp.get('fsdp_min_num_params') !== 0)
      return [];
    return [
      report(ctx, this, {
        path: [FSDP, fsdp.keyOf('fsdp_min_num_params')],
        severity: 'warning',
        message:
          'SIZE_BASED_WRAP with fsdp_min_num_params 0 wraps every module separately; give a threshold (e.g. 100000000)',
        fixes: [
          {
            title: "Set fsdp_min_num_params to 100000000 (accelerate's default)",
            preferred: true,
            edits: [{ kind: 'set', path: [FSDP, fsdp.keyOf('fsdp_min_num_params')], value: 100000000 }],
          },
        ],
      }),
    ];
  },
};
