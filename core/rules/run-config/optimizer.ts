// Run config rules about the optimizer's settings.
import { asNumber, report, valueAt, type ConfigRule } from '../rule';

/** Above this, AdamW changes every weight by about the learning rate per step, far beyond their scale. */
export const LEARNING_RATE_WARN_ABOVE = 0.1;
const SCHEMA_DEFAULT = 0.0003;

export const learningRateTooHigh: ConfigRule = {
  code: 'run.learning-rate-high',
  why: 'AdamW normalises each gradient by its running RMS, so every step moves each weight by roughly the learning rate. Transformer weights start near 0.02 (init_std); a learning rate above 0.1 moves them by several times their own size per step and the run diverges within a few steps. Pre-training uses 1e-4 to 1e-3, fine-tuning 1e-5 to 1e-4.',
  source:
    'Loshchilov & Hutter, Decoupled Weight Decay Regularization (https://arxiv.org/abs/1711.05101); core/schemas/run-config.schema.json (TrainingConfig.learning_rate, default 3e-4)',
  check(ctx) {
    const lr = asNumber(valueAt(ctx.value, ['training', 'learning_rate']));
    if (lr === undefined || !(lr > LEARNING_RATE_WARN_ABOVE)) return [];
    return [
      report(ctx, this, {
        path: ['training', 'learning_rate'],
        severity: 'warning',
        message: `learning_rate ${lr} is far above what AdamW trains with (1e-5 … 1e-3): every step moves each weight by about ${lr}, and the loss will diverge`,
        fixes: [
          {
            title: `Set learning_rate to ${SCHEMA_DEFAULT}`,
            preferred: true,
            edits: [{ kind: 'set', path: ['training', 'learning_rate'], value: SCHEMA_DEFAULT }],
          },
        ],
      }),
    ];
  },
};
