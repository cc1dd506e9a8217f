// accelerate launch rules: what `accelerate launch --config_file` needs to start the right number
// of processes on the right machines (accelerate/commands/launch.py, accelerate/utils/launch.py).
import type { ConfigProblem } from '../../config/schema-problems';
import { asNumber, report, type ConfigRule } from '../rule';

export const distributedTypeRequired: ConfigRule = {
  code: 'accelerate.distributed-type',
  why: 'accelerate cannot tell which launcher to use without distributed_type: it raises "A `distributed_type` must be specified in the config file."',
  source: 'accelerate/commands/config/config_args.py: BaseConfig.process_config',
  check(ctx) {
    if ('distributed_type' in ctx.value) return [];
    return [
      report(ctx, this, {
        path: [],
        severity: 'error',
        message:
          'missing distributed_type (NO, MULTI_GPU, FSDP, DEEPSPEED, ...): accelerate refuses a config without it',
      }),
    ];
  },
};

const MULTI_DEVICE = [
  'MULTI_GPU',
  'MULTI_NPU',
  'MULTI_MLU',
  'MULTI_SDAA',
  'MULTI_MUSA',
  'MULTI_XPU',
  'MULTI_HPU',
  'MULTI_NEURON',
];

export const processCount: ConfigRule = {
  code: 'accelerate.num-processes',
  why: 'num_processes -1 is a placeholder: `accelerate launch` raises "You need to manually pass in `--num_processes` using this config yaml" unless the command line gives it. Multi-device data parallelism needs at least 2 processes (the --multi_gpu flag refuses fewer).',
  source: 'accelerate/commands/launch.py: _validate_launch_command',
  check(ctx) {
    const n = asNumber(ctx.value.num_processes);
    if (n === -1)
      return [
        report(ctx, this, {
          path: ['num_processes'],
          severity: 'warning',
          message: 'num_processes -1: accelerate launch fails unless you pass --num_processes on the command line',
        }),
      ];
    const type = ctx.value.distributed_type;
    if (n !== undefined && n >= 0 && n < 2 && typeof type === 'string' && MULTI_DEVICE.includes(type)) {
      return [
        report(ctx, this, {
          path: ['num_processes'],
          severity: 'warning',
          message: `${type} with num_processes ${n}: data parallelism needs at least 2 processes (accelerate launch --multi_gpu refuses fewer); use distributed_type NO for one device`,
          fixes: [{ title: 'Set num_processes to 2', edits: [{ kind: 'set', path: ['num_processes'], value: 2 }] }],
        }),
      ];
    }
    if (n !== undefined && n < -1)
      return [
        report(ctx, this, {
          path: ['num_processes'],
          severity: 'error',
          message: `num_processes ${n} is not a process count`,
        }),
      ];
    return [];
  },
};

export const multiNodeAddress: ConfigRule = {
  code: 'accelerate.multi-node-address',
  why: 'With several machines every process must find the main one: the plain launcher asserts main_process_ip and main_process_port, torchrun gets the address "None" without the IP (the port defaults to 29500).',
  source: 'accelerate/utils/launch.py: prepare_simple_launcher_cmd_env, prepare_multi_gpu_env',
  check(ctx) {
    const machines = asNumber(ctx.value.num_machines);
    if (machines === undefined || machines <= 1) return [];
    const problems: ConfigProblem[] = [];
    if (ctx.value.main_process_ip === undefined || ctx.value.main_process_ip === null) {
      problems.push(
        report(ctx, this, {
          path: ['num_machines'],
          severity: 'error',
          message: `num_machines ${machines} needs main_process_ip, the address of the machine with rank 0`,
        }),
      );
    }
    if (ctx.value.main_process_port === undefined || ctx.value.main_process_port === null) {
      problems.push(
        report(ctx, this, {
          path: ['num_machines'],
          severity: 'warning',
          message: `num_machines ${machines} without main_process_port: torchrun falls back to 29500 and MULTI_CPU refuses to start; give the port every machine uses`,
        }),
      );
    }
    return problems;
  },
};

export const processesPerMachine: ConfigRule = {
  code: 'accelerate.processes-per-machine',
  why: 'accelerate starts num_processes // num_machines processes on each machine, so a remainder is silently dropped and the world size differs from num_processes.',
  source:
    'accelerate/utils/launch.py: prepare_multi_gpu_env, prepare_deepspeed_cmd_env (nproc_per_node = num_processes // num_machines)',
  check(ctx) {
    const n = asNumber(ctx.value.num_processes);
    const machines = asNumber(ctx.value.num_machines);
    if (n === undefined || machines === undefined || machines < 1 || n < 1 || n % machines === 0) return [];
    const per = Math.floor(n / machines);
    return [
      report(ctx, this, {
        path: ['num_processes'],
        severity: 'error',
        message: `num_processes ${n} is not divisible by num_machines ${machines}: accelerate would start ${per} per machine, ${per * machines} in all`,
        fixes: [
          {
            title: `Set num_processes to ${per * machines}`,
            edits: [{ kind: 'set', path: ['num_processes'], value: per * machines }],
          },
          {
            title: `Set num_processes to ${(per + 1) * machines}`,
            edits: [{ kind: 'set', path: ['num_processes'], value: (per + 1) * machines }],
          },
        ],
      }),
    ];
  },
};
