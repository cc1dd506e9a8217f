// DeepSpeed's batch arithmetic: train_batch_size = micro batch x accumulation steps x world size.
// Source: deepspeed/runtime/config.py DeepSpeedConfig._set_batch_related_parameters and
// _batch_assertion; https://www.deepspeed.ai/docs/config-json/#batch-size-related-parameters.
// DeepSpeed infers a missing one of the three with integer division, then asserts the product, so
// a product that does not divide fails at start-up even when only two are given.
import { asNumber, report, type ConfigRule, type RuleContext } from '../rule';
import type { ConfigProblem } from '../../config/schema-problems';

const TBS = 'train_batch_size';
const MBS = 'train_micro_batch_size_per_gpu';
const GAS = 'gradient_accumulation_steps';

export const batchSizeProduct: ConfigRule = {
  code: 'deepspeed.batch-size',
  why: 'DeepSpeed asserts train_batch_size == train_micro_batch_size_per_gpu × gradient_accumulation_steps × world size at start-up; a missing one is inferred with integer division, so the others must divide evenly.',
  source: 'deepspeed/runtime/config.py: DeepSpeedConfig._set_batch_related_parameters, _batch_assertion',
  check(ctx) {
    const v = ctx.value;
    if ([TBS, MBS, GAS].some((k) => v[k] === 'auto')) return []; // Hugging Face fills them in consistently
    const tbs = asNumber(v[TBS]);
    const mbs = asNumber(v[MBS]);
    const gas = asNumber(v[GAS]);
    if ([tbs, mbs, gas].some((n) => n !== undefined && (n < 1 || !Number.isInteger(n)))) return []; // the schema reports it
    const world = ctx.env.settings.deepspeedWorldSize;
    if (tbs === undefined && mbs === undefined) {
      // Frameworks that wrap DeepSpeed (the HF Trainer, Lightning) fill in a missing micro batch;
      // deepspeed.initialize alone asserts one of them is given.
      const alone = ctx.env.settings.deepspeedLaunchedWith === 'deepspeed';
      if (v[TBS] !== undefined || v[MBS] !== undefined || ctx.env.settings.deepspeedLaunchedWith === 'huggingface')
        return [];
      return [
        report(ctx, this, {
          path: [],
          severity: alone ? 'error' : 'hint',
          message: `no ${TBS} or ${MBS}: deepspeed.initialize needs one of them${alone ? '' : ' (wrappers such as the HF Trainer fill in the micro batch)'}`,
        }),
      ];
    }
    if (tbs === undefined) return []; // DeepSpeed computes it from the others
    return world ? checkWithWorld(ctx, tbs, mbs, gas, world) : checkDivisible(ctx, tbs, mbs, gas);
  },
};

function checkWithWorld(
  ctx: RuleContext,
  tbs: number,
  mbs: number | undefined,
  gas: number | undefined,
  world: number,
): ConfigProblem[] {
  const micro = mbs ?? Math.floor(Math.floor(tbs / world) / (gas ?? 1));
  const accum = gas ?? (mbs !== undefined ? Math.floor(Math.floor(tbs / mbs) / world) : 1);
  const product = micro * accum * world;
  if (product === tbs && micro > 0 && accum > 0) return [];
  const shown = `${mbs ?? micro} × ${gas ?? accum} × ${world}`;
  const explicit = mbs !== undefined && gas !== undefined;
  return [
    report(ctx, batchSizeProduct, {
      path: [TBS],
      severity: 'error',
      message: explicit
        ? `${TBS} ${tbs} ≠ ${MBS} × ${GAS} × world size = ${shown} = ${product}`
        : `${TBS} ${tbs} is not divisible into ${MBS} × ${GAS} × world size ${world}: DeepSpeed infers ${shown} = ${product} and stops`,
      fixes: explicit
        ? [
            {
              title: `Set ${TBS} to ${product}`,
              preferred: true,
              edits: [{ kind: 'set', path: [TBS], value: product }],
            },
          ]
        : undefined,
    }),
  ];
}

function checkDivisible(
  ctx: RuleContext,
  tbs: number,
  mbs: number | undefined,
  gas: number | undefined,
): ConfigProblem[] {
  const perRank = (mbs ?? 1) * (gas ?? 1);
  if (mbs === undefined || tbs % perRank === 0) return [];
  return [
    report(ctx, batchSizeProduct, {
      path: [TBS],
      severity: 'error',
      message: `${TBS} ${tbs} is not a multiple of ${MBS} × ${GAS} = ${perRank}: no world size satisfies ${TBS} = ${mbs} × ${gas ?? 1} × world size`,
    }),
  ];
}
