// Run config rules about launching beyond one machine: a SLURM job (launch.slurm) and one job
// across several SSH hosts (launch.hosts) — what their shape asks of the other launch keys.
import { directiveProblem, timeLimitSeconds } from '../../config/sbatch-options';
import { asNumber, isObject, report, valueAt, type ConfigRule } from '../rule';

export const slurmOrHosts: ConfigRule = {
  code: 'run.slurm-or-hosts',
  why: 'A run is either one SLURM job (launch.slurm: the scheduler picks its nodes) or one mpirun job across the SSH hosts you name (launch.hosts), not both.',
  source: 'core/schemas/run-config.schema.json (LaunchConfig.slurm, LaunchConfig.hosts)',
  check(ctx) {
    if (!isObject(valueAt(ctx.value, ['launch', 'slurm'])) || valueAt(ctx.value, ['launch', 'hosts']) === undefined)
      return [];
    return [
      report(ctx, this, {
        path: ['launch', 'hosts'],
        part: 'key',
        severity: 'error',
        message:
          'launch.hosts and launch.slurm exclude each other: SLURM chooses the nodes of its job; remove one of them',
      }),
    ];
  },
};

export const hostsMatchNodes: ConfigRule = {
  code: 'run.hosts-nodes',
  why: 'mpirun starts launch.nproc_per_node ranks on each host of launch.hosts, and the runtime sizes its world and HYBRID_SHARD groups from launch.nnodes: the two must agree. The run starts on the first host, where its folder lives.',
  source: 'runs/launch/mpirun.ts (mpirunArgv with hosts)',
  check(ctx) {
    const hosts = valueAt(ctx.value, ['launch', 'hosts']);
    if (!Array.isArray(hosts) || hosts.length < 2) return [];
    const out = [];
    const nodes = asNumber(valueAt(ctx.value, ['launch', 'nnodes'])) ?? 1;
    if (nodes !== hosts.length) {
      const present = valueAt(ctx.value, ['launch', 'nnodes']) !== undefined;
      out.push(
        report(ctx, this, {
          path: present ? ['launch', 'nnodes'] : ['launch', 'hosts'],
          part: present ? 'value' : 'key',
          severity: 'error',
          message: `launch.hosts names ${hosts.length} hosts but launch.nnodes is ${nodes}: one node per host`,
          fixes: [
            {
              title: `Set launch.nnodes: ${hosts.length}`,
              edits: [{ kind: 'set', path: ['launch', 'nnodes'], value: hosts.length }],
              preferred: true,
            },
          ],
        }),
      );
    }
    const target = valueAt(ctx.value, ['launch', 'target']);
    if (typeof target === 'string' && target !== hosts[0]) {
      out.push(
        report(ctx, this, {
          path: ['launch', 'target'],
          severity: 'error',
          message: `a run across launch.hosts starts on the first of them (${String(hosts[0])}), not on ${JSON.stringify(target)}: remove launch.target or name that host`,
          fixes: [{ title: 'Remove launch.target', edits: [{ kind: 'remove', path: ['launch', 'target'] }] }],
        }),
      );
    }
    return out;
  },
};

export const slurmGpusPerTask: ConfigRule = {
  code: 'run.slurm-gpus',
  why: 'Each rank drives one GPU (chosen by its local rank), so a CUDA job needs at least launch.nproc_per_node GPUs per node; a CPU job that asks for GPUs waits for nodes it will not use.',
  source: 'native/src/train/backend_options.cc (the GPU of a rank: its local rank); sbatch --gpus-per-node',
  check(ctx) {
    const slurm = valueAt(ctx.value, ['launch', 'slurm']);
    const gpus = isObject(slurm) ? asNumber(slurm.gpus_per_node) : undefined;
    if (gpus === undefined) return [];
    const perNode = asNumber(valueAt(ctx.value, ['launch', 'nproc_per_node'])) ?? 1;
    const cuda = valueAt(ctx.value, ['launch', 'device']) === 'cuda';
    if (cuda && gpus < perNode) {
      return [
        report(ctx, this, {
          path: ['launch', 'slurm', 'gpus_per_node'],
          severity: 'error',
          message: `${perNode} tasks per node need ${perNode} GPUs per node (one each), not ${gpus}`,
          fixes: [
            {
              title: `Set gpus_per_node: ${perNode}`,
              edits: [{ kind: 'set', path: ['launch', 'slurm', 'gpus_per_node'], value: perNode }],
            },
          ],
        }),
      ];
    }
    if (!cuda && gpus > 0) {
      return [
        report(ctx, this, {
          path: ['launch', 'slurm', 'gpus_per_node'],
          severity: 'warning',
          message: 'launch.device is cpu: the job would hold GPUs it does not use',
          fixes: [
            { title: 'Remove gpus_per_node', edits: [{ kind: 'remove', path: ['launch', 'slurm', 'gpus_per_node'] }] },
          ],
        }),
      ];
    }
    return [];
  },
};

export const slurmDirectivesOwnKeys: ConfigRule = {
  code: 'run.slurm-directive',
  why: "The batch script sets the job's shape, output, working directory, signal and requeue from the config; an extra #SBATCH line setting one of them again — in any spelling sbatch accepts: -t 5, --time=5, --ti 5, --no-requ — overrides it (the later line wins) and breaks what the editor relies on (the run folder gets no output, requeue is off). Options that change how sbatch or the job behaves (--wait, --array, --dependency, --hold, --clusters, --test-only, --wrap) break the one-job-per-run-folder the editor follows, and are refused at launch. A directive sbatch cannot read makes the submission fail.",
  source:
    "core/config/sbatch-options.ts (readDirective: getopt_long's rules; SET_BY_THE_SCRIPT, BREAKS_THE_RUN); runs/slurm/slurm-script.ts (batchScript)",
  check(ctx) {
    const extra = valueAt(ctx.value, ['launch', 'slurm', 'extra_directives']);
    if (!Array.isArray(extra)) return [];
    const out = [];
    for (const [i, line] of extra.entries()) {
      if (typeof line !== 'string') continue;
      const problem = directiveProblem(line);
      if (problem) out.push(report(ctx, this, { path: ['launch', 'slurm', 'extra_directives', i], ...problem }));
    }
    return out;
  },
};

export const slurmSignalWithinLimit: ConfigRule = {
  code: 'run.slurm-signal',
  why: 'signal_before_limit_s tells the job to save and requeue itself that long before its time limit; as long as the limit itself, the job would be told so as soon as it starts, and requeue forever.',
  source: 'sbatch --signal=B:USR1@N (runs/slurm/slurm-script.ts)',
  check(ctx) {
    const slurm = valueAt(ctx.value, ['launch', 'slurm']);
    if (!isObject(slurm)) return [];
    const limit = timeLimitSeconds(slurm.time_limit);
    const signal = asNumber(slurm.signal_before_limit_s) ?? 120;
    if (limit === undefined || signal === 0 || signal < limit) return [];
    return [
      report(ctx, this, {
        path: ['launch', 'slurm', slurm.signal_before_limit_s === undefined ? 'time_limit' : 'signal_before_limit_s'],
        severity: 'warning',
        message: `the job would be told to save and requeue ${signal} s before a time limit of ${limit} s, that is at once: raise time_limit or lower signal_before_limit_s`,
      }),
    ];
  },
};
