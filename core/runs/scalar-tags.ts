// Scalars by the names other trainers give them. Runs of the Hugging Face Trainer, Lightning,
// torchtitan or a person's own SummaryWriter log `train/loss`, `train_loss`, `lr-AdamW`,
// `grad_norm`, `throughput(tps)`…: the ones that mean what the native runtime's charts show (loss,
// learning rate, gradient norm, throughput, validation loss) are recognised here and drawn where the
// native charts are; every tag is also shown in groups by its prefix, as TensorBoard groups them.
// The native runtime's own scalars carry the names in NATIVE_TAGS, in metrics.jsonl and in the
// TensorBoard event files it writes (native/src/metrics/tensorboard_writer.cc) alike.

export type RecognisedMetric = 'loss' | 'val_loss' | 'lr' | 'grad_norm' | 'tokens_per_s' | 'step_ms' | 'mfu';

/** The native runtime's step and eval fields under their scalar tag names. */
export const NATIVE_TAGS = {
  loss: 'train/loss',
  lr: 'train/lr',
  grad_norm: 'train/grad_norm',
  tokens_per_s: 'train/tokens_per_s',
  step_ms: 'train/step_ms',
  mfu: 'train/mfu',
  val_loss: 'eval/loss',
} as const satisfies Record<RecognisedMetric, string>;

const EVAL = '(eval|val|valid|validation|test|dev)';

/** Rules, most specific first; each tests the lower-cased tag. */
const RULES: Array<[RecognisedMetric, RegExp]> = [
  // eval/loss, val_loss, loss/val, validation/loss, eval_loss
  ['val_loss', new RegExp(`(^|[/_.-])${EVAL}[/_.-]?loss$|(^|/)loss[/_.-]${EVAL}$`)],
  // train/loss, loss, train_loss, training_loss, loss/train, loss_metrics/global_avg_loss (torchtitan)
  [
    'loss',
    /(^|[/_.-])(train|training)[/_.-]?loss$|^loss$|(^|\/)loss[/_.-]train(ing)?$|(^|\/)(global_)?avg_loss$|(^|\/)loss$/,
  ],
  // train/learning_rate, lr, lr-AdamW (Lightning's LearningRateMonitor), lr/group0
  ['lr', /(^|[/_.-])(learning_rate|learning-rate|learningrate|lr)([-/][\w.]+)?$/],
  ['grad_norm', /(^|[/_.-])(global_)?grad(ient)?[_-]?norm(_total)?$/],
  // tokens_per_s, tokens_per_second, throughput(tps) (torchtitan), tps, wps
  ['tokens_per_s', /(^|[/_.-])(tokens?[_-]?per[_-]?s(ec(ond)?)?|throughput\(tps\)|tps|wps)$/],
  ['step_ms', /(^|[/_.-])step[_-]?ms$/],
  ['mfu', /(^|[/_.-])mfu$/],
];

/** What a tag means, when it is one of the metrics the dashboard draws in its own charts. */
export function recogniseTag(tag: string): RecognisedMetric | undefined {
  const t = tag.toLowerCase();
  for (const [metric, rule] of RULES) if (rule.test(t)) return metric;
  return undefined;
}

/** The group a tag is shown in: its prefix before the first `/`, as TensorBoard groups them. */
export function tagGroup(tag: string): string {
  const slash = tag.indexOf('/');
  return slash > 0 ? tag.slice(0, slash) : '';
}
