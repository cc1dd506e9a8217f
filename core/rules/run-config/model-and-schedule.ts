// Run config rules about the model's shape, the precision and the run's schedule.
import type { ConfigProblem } from '../../config/schema-problems';
import { asNumber, isObject, report, valueAt, type ConfigRule } from '../rule';

export const sequenceFitsModel: ConfigRule = {
  code: 'run.seq-len',
  why: 'The model has max_seq_len learned position embeddings; a training sequence longer than that has positions without an embedding.',
  source: 'core/schemas/run-config.schema.json (DataConfig.seq_len: "must not exceed" model.max_seq_len)',
  check(ctx) {
    const seq = asNumber(valueAt(ctx.value, ['data', 'seq_len']));
    const max = asNumber(valueAt(ctx.value, ['model', 'max_seq_len']));
    if (seq === undefined || max === undefined || seq <= max) return [];
    return [
      report(ctx, this, {
        path: ['data', 'seq_len'],
        severity: 'error',
        message: `data.seq_len ${seq} is longer than model.max_seq_len ${max}`,
        fixes: [
          { title: `Set data.seq_len to ${max}`, edits: [{ kind: 'set', path: ['data', 'seq_len'], value: max }] },
          {
            title: `Set model.max_seq_len to ${seq}`,
            edits: [{ kind: 'set', path: ['model', 'max_seq_len'], value: seq }],
          },
        ],
      }),
    ];
  },
};

const FP16 = 'float16';

export const fp16NeedsLossScaling: ConfigRule = {
  code: 'run.fp16-loss-scaling',
  why: 'float16 has 5 exponent bits: small gradients underflow to zero unless the loss is scaled up before backward. A fixed scale of 1 (loss_scale.dynamic false, initial 1) is no scaling at all.',
  source:
    'core/schemas/run-config.schema.json (LossScaleConfig); Micikevicius et al., Mixed Precision Training (https://arxiv.org/abs/1710.03740)',
  check(ctx) {
    const mp = ctx.value.mixed_precision;
    if (!isObject(mp) || (mp.param_dtype !== FP16 && mp.reduce_dtype !== FP16)) return [];
    const ls = mp.loss_scale;
    const dynamic = isObject(ls) ? ls.dynamic : undefined;
    const initial = isObject(ls) ? asNumber(ls.initial) : undefined;
    if (dynamic !== false || (initial ?? 65536) > 1) return [];
    return [
      report(ctx, this, {
        path: ['mixed_precision', 'loss_scale'],
        part: 'key',
        severity: 'warning',
        message: 'float16 without loss scaling: small gradients underflow to zero. Use dynamic loss scaling',
        fixes: [
          {
            title: 'Use dynamic loss scaling',
            preferred: true,
            edits: [{ kind: 'set', path: ['mixed_precision', 'loss_scale', 'dynamic'], value: true }],
          },
        ],
      }),
    ];
  },
};

export const checkpointingPolicyNeedsEnabled: ConfigRule = {
  code: 'run.activation-checkpointing-disabled',
  why: 'Activation checkpointing is off unless enabled is true; policy, every_n_layers and memory_budget_gb are then ignored.',
  source: 'core/schemas/run-config.schema.json (ActivationCheckpointingConfig.enabled, default false)',
  check(ctx) {
    const ac = ctx.value.activation_checkpointing;
    if (!isObject(ac) || ac.enabled === true) return [];
    const set = ['policy', 'every_n_layers', 'memory_budget_gb'].filter((k) => k in ac);
    if (!set.length) return [];
    const explicitOff = ac.enabled === false;
    return [
      report(ctx, this, {
        path: ['activation_checkpointing', set[0]],
        part: 'key',
        severity: 'warning',
        message: `${set.join(', ')} ${set.length > 1 ? 'are' : 'is'} ignored: activation_checkpointing.enabled is ${explicitOff ? 'false' : 'not set (false)'}`,
        fixes: [
          {
            title: 'Set activation_checkpointing.enabled: true',
            preferred: !explicitOff,
            edits: [{ kind: 'set', path: ['activation_checkpointing', 'enabled'], value: true }],
          },
        ],
      }),
    ];
  },
};

export const checkpointIntervalWithinRun: ConfigRule = {
  code: 'run.checkpoint-interval',
  why: 'A step-based checkpoint is written every save_every_n_steps optimizer steps; an interval longer than max_steps never triggers during the run.',
  source: 'core/schemas/run-config.schema.json (CheckpointingConfig.save_every_n_steps, save_final)',
  check(ctx) {
    const every = asNumber(valueAt(ctx.value, ['checkpointing', 'save_every_n_steps']));
    const steps = asNumber(valueAt(ctx.value, ['training', 'max_steps']));
    if (every === undefined || steps === undefined || every === 0 || every <= steps) return [];
    const final = valueAt(ctx.value, ['checkpointing', 'save_final']) !== false;
    const problems: ConfigProblem[] = [
      report(ctx, this, {
        path: ['checkpointing', 'save_every_n_steps'],
        severity: 'warning',
        message: `save_every_n_steps ${every} is longer than the run (max_steps ${steps}): no checkpoint is saved during the run${final ? ', only the final one' : ''}`,
        fixes: [
          {
            title: `Save every ${steps} steps`,
            edits: [{ kind: 'set', path: ['checkpointing', 'save_every_n_steps'], value: steps }],
          },
        ],
      }),
    ];
    return problems;
  },
};
