// torchtitan's batch arithmetic (torchtitan/train.py: Trainer.__init__): global_batch_size, when
// given, must be local_batch_size × data-parallel degree (replicate × shard) × the accumulation
// steps it implies, a whole number; -1 means one step of local_batch_size on every data-parallel rank.
import { asNumber, isObject, report, type ConfigRule } from '../rule';
import { batchDegree, readDegrees } from './degrees';

export const globalBatchSize: ConfigRule = {
  code: 'torchtitan.global-batch',
  why: 'torchtitan computes gradient accumulation steps as global_batch_size / (local_batch_size × data-parallel degree) and asserts it divides evenly ("global batch size must be multiple of local batch size times data-parallel degree").',
  source: 'torchtitan/train.py: Trainer.__init__ (gradient_accumulation_steps)',
  check(ctx) {
    const t = ctx.value.training;
    if (!isObject(t)) return [];
    const global = asNumber(t.global_batch_size);
    const local = asNumber(t.local_batch_size) ?? 8;
    if (global === undefined || global < 0 || !Number.isInteger(global) || local < 1) return [];
    const d = readDegrees(ctx);
    const dp = d && batchDegree(d);
    if (global === 0)
      return [
        report(ctx, this, {
          path: ['training', 'global_batch_size'],
          severity: 'error',
          message: 'global_batch_size must be positive, or -1 for local_batch_size × the data-parallel degree',
        }),
      ];
    if (dp === undefined) {
      // Without the world size only the local batch can be checked.
      if (global % local === 0) return [];
      return [
        report(ctx, this, {
          path: ['training', 'global_batch_size'],
          severity: 'error',
          message: `global_batch_size ${global} is not a multiple of local_batch_size ${local}`,
        }),
      ];
    }
    const perStep = local * dp;
    if (global % perStep === 0) return [];
    const nearest = Math.max(perStep, Math.round(global / perStep) * perStep);
    return [
      report(ctx, this, {
        path: ['training', 'global_batch_size'],
        severity: 'error',
        message: `global_batch_size ${global} is not local_batch_size ${local} × data-parallel degree ${dp} (replicate ${d!.replicate} × shard ${d!.shard}) × whole accumulation steps; ${nearest} would be ${nearest / perStep} step${nearest / perStep > 1 ? 's' : ''}`,
        fixes: [
          {
            title: `Set global_batch_size = ${nearest} (${nearest / perStep} accumulation step${nearest / perStep > 1 ? 's' : ''})`,
            preferred: true,
            edits: [{ kind: 'set', path: ['training', 'global_batch_size'], value: nearest }],
          },
        ],
      }),
    ];
  },
};
