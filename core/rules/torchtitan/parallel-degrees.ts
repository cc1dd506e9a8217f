// The parallel degrees against the world size and each other, as ParallelDims._validate asserts
// them at start-up (torchtitan/distributed/parallel_dims.py), and expert parallelism, which borrows
// its ranks from data_parallel_shard × context × tensor parallel (the "efsdp" mesh).
import type { ConfigProblem } from '../../config/schema-problems';
import { isObject, report, type ConfigRule } from '../rule';
import { PARALLELISM, readDegrees } from './degrees';

const SHARD = 'data_parallel_shard_degree';

export const worldSizeProduct: ConfigRule = {
  code: 'torchtitan.world-size',
  why: 'torchtitan asserts data_parallel_replicate × data_parallel_shard × context × tensor × pipeline parallel degrees == WORLD_SIZE at start-up ("Invalid parallel dims"); data_parallel_shard_degree = -1 takes the ranks left over, so the others must divide the world size. The world size is not in the TOML: give it in a comment, "# fsdp-studio: nproc=8 nnodes=2".',
  source: 'torchtitan/distributed/parallel_dims.py: ParallelDims._validate',
  check(ctx) {
    const section = ctx.value[PARALLELISM];
    if (isObject(section) && section[SHARD] === 0) {
      return [
        report(ctx, this, {
          path: [PARALLELISM, SHARD],
          severity: 'error',
          message: `${SHARD} must be -1 (the ranks left over) or ≥ 1, not 0`,
          fixes: [
            {
              title: `Set ${SHARD} = -1`,
              preferred: true,
              edits: [{ kind: 'set', path: [PARALLELISM, SHARD], value: -1 }],
            },
          ],
        }),
      ];
    }
    const d = readDegrees(ctx);
    if (!d || d.world === undefined) return [];
    const others = d.replicate * d.cp * d.tp * d.pp;
    const named = `data_parallel_replicate ${d.replicate} × context ${d.cp} × tensor ${d.tp} × pipeline ${d.pp}`;
    const at = isObject(section) && SHARD in section ? [PARALLELISM, SHARD] : isObject(section) ? [PARALLELISM] : [];
    if (d.shardAsWritten === -1) {
      if (d.world % others === 0) return [];
      return [
        report(ctx, this, {
          path: at,
          part: 'key',
          severity: 'error',
          message: `${named} = ${others} does not divide the world size ${d.world} (fsdp-studio comment), so ${SHARD} = -1 has no whole value`,
        }),
      ];
    }
    const product = others * d.shardAsWritten;
    if (product === d.world) return [];
    const fixes =
      d.world % others === 0
        ? [
            {
              title: `Set ${SHARD} = -1 (${d.world / others} on ${d.world} ranks)`,
              preferred: true,
              edits: [{ kind: 'set' as const, path: [PARALLELISM, SHARD], value: -1 }],
            },
          ]
        : undefined;
    return [
      report(ctx, this, {
        path: at,
        severity: 'error',
        message: `${named} × data_parallel_shard ${d.shardAsWritten} = ${product} ≠ world size ${d.world} (fsdp-studio comment): torchtitan stops with "Invalid parallel dims"`,
        fixes,
      }),
    ];
  },
};

export const expertParallel: ConfigRule = {
  code: 'torchtitan.expert-parallel',
  why: 'Expert parallelism reuses the ranks of data_parallel_shard × context × tensor parallel: their product must be divisible by expert_parallel_degree × expert_tensor_parallel_degree (the "efsdp" mesh), and expert_tensor_parallel_degree must be 1 or equal to tensor_parallel_degree ("Currently we only support ETP=TP or ETP=1").',
  source: 'torchtitan/distributed/parallel_dims.py: ParallelDims._validate, _validate_meshes',
  check(ctx) {
    const d = readDegrees(ctx);
    if (!d || d.ep === 1) return [];
    const problems: ConfigProblem[] = [];
    if (d.etp !== 1 && d.etp !== d.tp) {
      problems.push(
        report(ctx, this, {
          path: [PARALLELISM, 'expert_tensor_parallel_degree'],
          severity: 'error',
          message: `expert_tensor_parallel_degree ${d.etp} must be 1 or the tensor_parallel_degree ${d.tp}`,
          fixes: [
            {
              title: 'Set expert_tensor_parallel_degree = 1',
              preferred: true,
              edits: [{ kind: 'set', path: [PARALLELISM, 'expert_tensor_parallel_degree'], value: 1 }],
            },
          ],
        }),
      );
    }
    if (d.shard !== undefined) {
      const borrowed = d.shard * d.cp * d.tp;
      if (borrowed % (d.ep * d.etp) !== 0) {
        problems.push(
          report(ctx, this, {
            path: [PARALLELISM, 'expert_parallel_degree'],
            severity: 'error',
            message: `data_parallel_shard ${d.shard} × context ${d.cp} × tensor ${d.tp} = ${borrowed} is not divisible by expert_parallel ${d.ep} × expert_tensor_parallel ${d.etp}: expert parallelism takes its ranks from those`,
          }),
        );
      }
    }
    return problems;
  },
};
