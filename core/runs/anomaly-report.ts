// What the NaN diagnostics view says about an anomaly: the dump file's contents as tables (any
// list of per-layer records becomes a table, the named layer highlighted; any record of plain
// fields, such as the batch, a two-column table), the policy's action in words, and the usual
// fixes that apply to this run's config, each with the config change that makes it.
import type { AnomalyView, DumpTable, Fix, FixId } from '../panels/diagnostics-messages';
import type { AnomalyEvent } from '../protocol/metrics';
import { nonFiniteWord, type NonFiniteEnd, type NonFiniteScalar, type ScalarSource } from './nonfinite-scalars';
import { describeAnomaly } from './run-history';
import {
  bf16Advice,
  clipAdvice,
  learningRateAdvice,
  nativeAdvice,
  suggestedWarmup,
  warmupAdvice,
  type AdviceContext,
} from './run-advice';

type Scalar = string | number | boolean | null;

/** Columns worth a bar chart, most telling first. */
const CHART_COLUMNS = ['max_abs', 'absmax', 'abs_max', 'max', 'rms', 'norm', 'grad_norm'];
const MAX_ROWS = 500;

export function anomalyView(
  event: AnomalyEvent,
  dump: unknown,
  dumpError: string | undefined,
  config: unknown,
  advice: AdviceContext = nativeAdvice(config),
): AnomalyView {
  return {
    event,
    summary: describeAnomaly(event),
    policy: policyText(event),
    ...(event.dump ? { dumpPath: event.dump } : {}),
    tables:
      dump === undefined
        ? []
        : isNativeDump(dump)
          ? nativeDumpTables(dump, event, vocabSize(config))
          : dumpTables(dump, event.where.layer),
    ...(dumpError ? { dumpError } : {}),
    fixes: fixesFor(event, advice),
  };
}

/** Where a logged value was read, in the NaN view's words. */
const SOURCE_WORDS: Record<ScalarSource, string> = {
  runtime: "the runtime's step events",
  companion: 'fsdp_studio.log (metrics.jsonl)',
  tensorboard: 'TensorBoard event files',
  printed: "the script's printed output",
};

/**
 * The NaN view's entries for logged scalars that were NaN or Inf (one per tag and rank, at its first
 * such step), after the anomalies the runtime or fsdp_studio.watch located: a series whose first
 * non-finite step already has a located anomaly (of that rank) adds nothing to it. `end`: what the
 * run ends with, whose wording (the Trainer's hidden loss) the gradient norm's entry takes.
 */
export function nonFiniteViews(
  scalars: readonly NonFiniteScalar[],
  located: readonly AnomalyEvent[],
  advice: AdviceContext,
  end?: NonFiniteEnd,
): AnomalyView[] {
  return uncoveredNonFinite(scalars, located).map((n) => {
    const event: AnomalyEvent = {
      v: 1,
      type: 'anomaly',
      time: n.time,
      step: n.step,
      kind: n.kind === 'inf' ? 'inf' : 'nan',
      where: {
        phase: n.metric === 'grad_norm' ? 'backward' : n.metric === 'lr' ? 'optimizer' : 'loss',
        ...(n.rank !== null ? { rank: n.rank } : {}),
      },
      action: 'report',
    };
    const hidden = end?.lossHidden === true && end.tag === n.tag;
    const value = nonFiniteWord(n.kind);
    return {
      event,
      summary: hidden ? end.text : `${n.tag} ${value} from step ${n.step}`,
      policy:
        'Read from a logged value: what the run did next is up to its own code. `fsdp_studio.watch(model)` in the script finds the module and the phase where a NaN or Inf begins.',
      tables: [],
      fixes:
        advice.framework === 'native'
          ? fixesFor(event, advice)
          : [
              ...scriptFixes(event, advice),
              {
                id: 'longer_warmup',
                title: 'Warm the learning rate up',
                detail: `A full learning rate on the first steps can diverge before the weights settle. ${warmupAdvice(advice)}`,
              },
              ...(hidden
                ? [
                    {
                      id: 'see_loss' as const,
                      title: 'See the NaN loss itself',
                      detail:
                        'The Trainer logs a stand-in for a NaN or Inf loss while `logging_nan_inf_filter` is on (its default). Pass `logging_nan_inf_filter=False` to `TrainingArguments` to log the loss as it is.',
                    },
                  ]
                : []),
            ],
      scalar: { tag: n.tag, source: SOURCE_WORDS[n.source], value },
    };
  });
}

/**
 * The non-finite scalars no located anomaly (of the same step and rank) already stands for. The
 * runtime's own step events are covered by its anomaly of that step whichever rank reported it:
 * every rank's loss is NaN once one rank's is (the gradients are averaged).
 */
export function uncoveredNonFinite(
  scalars: readonly NonFiniteScalar[],
  located: readonly AnomalyEvent[],
): NonFiniteScalar[] {
  return scalars.filter(
    (n) =>
      !located.some(
        (a) =>
          (a.kind === 'nan' || a.kind === 'inf') &&
          a.step === n.step &&
          (n.source === 'runtime' || n.rank === null || a.where.rank === undefined || a.where.rank === n.rank),
      ),
  );
}

function policyText(e: AnomalyEvent): string {
  switch (e.action) {
    case 'stop':
      return 'The run stopped (stability.on_nan: stop). Its last checkpoint is intact; resume after a fix.';
    case 'skip':
      return `The update of step ${e.step} was skipped; training went on with the next batch.`;
    case 'rollback':
      return `The run rolled back to the checkpoint of step ${e.rollback_to ?? '?'}, skips the offending batch and continues with a lower learning rate.`;
    default:
      return 'Reported only; training went on.';
  }
}

/** The runtime's dump (native/src/diagnostics/nan_dump.cc): where, the batch's token ids, per-op statistics. */
interface NativeDump {
  format: 'fsdp-studio-nan-dump';
  step: number;
  tokens?: number[][];
  stats?: Array<{
    phase: string;
    kind: string;
    layer: number | string;
    op: string;
    name: string;
    mean: number | null;
    std: number | null;
    max_abs: number | null;
    nonfinite: number;
  }>;
}

function isNativeDump(d: unknown): d is NativeDump {
  return isRecord(d) && d.format === 'fsdp-studio-nan-dump';
}

const STAT_COLUMNS = ['phase', 'kind', 'layer', 'op', 'name', 'mean', 'std', 'max_abs', 'nonfinite'] as const;
const TOKENS_SHOWN = 32;

function nativeDumpTables(d: NativeDump, e: AnomalyEvent, vocab: number | undefined): DumpTable[] {
  const tables: DumpTable[] = [];
  const stats = d.stats ?? [];
  if (stats.length) {
    // The op that first held a non-finite value: the one the anomaly names, else the first that did.
    let first = stats.findIndex(
      (r) => r.nonfinite > 0 && r.phase === e.where.phase && r.layer === e.where.layer && r.op === e.where.op,
    );
    if (first < 0) first = stats.findIndex((r) => r.nonfinite > 0);
    tables.push({
      title: 'Per-op statistics of the step, re-run with checks',
      columns: [...STAT_COLUMNS],
      rows: stats.slice(0, MAX_ROWS).map((r) => STAT_COLUMNS.map((c) => show(r[c] as Scalar))),
      chartColumn: 'max_abs',
      ...(first >= 0 && first < MAX_ROWS ? { highlightRow: first } : {}),
    });
  }
  const batches = d.tokens ?? [];
  if (batches.length) {
    // Byte-level data reads as text: showing it makes a corrupt batch obvious at a glance.
    const asText = vocab !== undefined && vocab <= 256;
    tables.push({
      title: 'The batch',
      columns: ['micro-batch', 'tokens', `first ${TOKENS_SHOWN} token ids`, ...(asText ? ['as text'] : [])],
      rows: batches.map((ids, i) => [
        i,
        ids.length,
        ids.slice(0, TOKENS_SHOWN).join(' '),
        ...(asText ? [bytesAsText(ids.slice(0, 120))] : []),
      ]),
    });
  }
  return tables;
}

function bytesAsText(ids: number[]): string {
  return ids.map((b) => (b >= 32 && b < 127 ? String.fromCharCode(b) : b === 10 ? '⏎' : '·')).join('');
}

function vocabSize(config: unknown): number | undefined {
  const v = (config as { model?: { vocab_size?: unknown } } | undefined)?.model?.vocab_size;
  return typeof v === 'number' ? v : undefined;
}

/** Tables from a dump of unknown shape: lists of records, and records of plain fields. */
export function dumpTables(dump: unknown, layer: AnomalyEvent['where']['layer']): DumpTable[] {
  if (!isRecord(dump)) return [];
  const tables: DumpTable[] = [];
  const plain: Array<[string, Scalar]> = [];
  for (const [key, value] of Object.entries(dump)) {
    if (Array.isArray(value) && value.length && value.every(isRecord)) tables.push(recordsTable(key, value, layer));
    else if (isRecord(value)) tables.push(fieldsTable(key, value));
    else if (Array.isArray(value)) plain.push([key, summarizeArray(value)]);
    else if (isScalar(value)) plain.push([key, value]);
  }
  if (plain.length)
    tables.unshift({ title: 'dump', columns: ['field', 'value'], rows: plain.map(([k, v]) => [k, show(v)]) });
  return tables;
}

function recordsTable(
  title: string,
  records: Array<Record<string, unknown>>,
  layer: AnomalyEvent['where']['layer'],
): DumpTable {
  const columns: string[] = [];
  for (const r of records)
    for (const [k, v] of Object.entries(r)) if ((isScalar(v) || isRecord(v)) && !columns.includes(k)) columns.push(k);
  const rows = records
    .slice(0, MAX_ROWS)
    .map((r) => columns.map((c) => show(r[c] as Scalar | Record<string, unknown> | undefined)));
  const highlight =
    layer === undefined || layer === null
      ? -1
      : records.findIndex((r) => r.layer === layer || r.name === layer || r.index === layer);
  const chartColumn = CHART_COLUMNS.find((c) => columns.includes(c) && records.some((r) => typeof r[c] === 'number'));
  return {
    title,
    columns,
    rows,
    ...(chartColumn ? { chartColumn } : {}),
    ...(highlight >= 0 ? { highlightRow: highlight } : {}),
  };
}

function fieldsTable(title: string, fields: Record<string, unknown>): DumpTable {
  return {
    title,
    columns: ['field', 'value'],
    rows: Object.entries(fields).map(([k, v]) => [k, show(Array.isArray(v) ? summarizeArray(v) : (v as Scalar))]),
  };
}

function show(v: Scalar | Record<string, unknown> | undefined): string | number | null {
  if (v === undefined || v === null) return null;
  if (typeof v === 'number' || typeof v === 'string') return v;
  if (typeof v === 'boolean') return String(v);
  return JSON.stringify(v).slice(0, 200);
}

function summarizeArray(a: unknown[]): string {
  const head = a
    .slice(0, 32)
    .map((x) => (typeof x === 'number' || typeof x === 'string' ? x : JSON.stringify(x)))
    .join(', ');
  return `[${head}${a.length > 32 ? `, … (${a.length} items)` : ''}]`;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isScalar(v: unknown): v is Scalar {
  return v === null || ['string', 'number', 'boolean'].includes(typeof v);
}

/**
 * The usual fixes, those that apply to this run first. A native run's fixes carry an action (the
 * config edit `fixEdit` makes); a person's own script gets the same fixes in its framework's words
 * (where to clip, where the learning rate is set), with nothing to click that would edit a file.
 */
export function fixesFor(e: AnomalyEvent, ctx: AdviceContext): Fix[] {
  if (ctx.framework !== 'native') return scriptFixes(e, ctx);
  const config = ctx.config;
  const fixes: Fix[] = [];
  const lr = config.training?.learning_rate;
  fixes.push({
    id: 'lower_lr',
    title: 'Lower the learning rate',
    detail: `Too large a step makes activations and the loss blow up${e.where.phase === 'optimizer' ? ', and this one happened in the optimizer' : ''}.${lr !== undefined ? ` Halving it takes training.learning_rate from ${lr} to ${lr / 2}.` : ''}`,
    ...(lr !== undefined ? { action: 'Halve learning_rate' } : {}),
  });
  const clip = config.training?.max_grad_norm;
  if (clip === undefined || clip === 0 || clip > 1) {
    fixes.push({
      id: 'clip',
      title: 'Clip gradients',
      detail: `One large gradient can push weights to Inf. training.max_grad_norm is ${clip ?? 'not set'}; 1.0 is the usual value.`,
      action: 'Set max_grad_norm: 1.0',
    });
  }
  if (config.mixed_precision?.param_dtype === 'float16') {
    fixes.push({
      id: 'bf16',
      title: 'Use bfloat16 instead of float16',
      detail:
        "float16 overflows above 65504; bfloat16 has float32's range, so activations and gradients do not turn into Inf.",
      action: 'Switch to bfloat16',
    });
  }
  if (config.stability?.on_nan === 'stop') {
    fixes.push({
      id: 'rollback_policy',
      title: 'Recover automatically',
      detail:
        'With stability.on_nan: rollback the run reloads its last checkpoint, skips the batch and lowers the learning rate instead of stopping.',
      action: 'Set on_nan: rollback',
    });
  }
  // The sample's data is made by samples/prepare-data.ts; anyone else's token file by their own tool.
  const sampleData = /fortunes-byte/.test(config.data?.train ?? '');
  fixes.push({
    id: 'check_data',
    title: 'Check the data',
    detail: `A corrupt or out-of-vocabulary batch gives NaN in the ${e.where.phase === 'forward' && (e.where.layer === 'embedding' || e.where.layer === 0) ? 'embedding, as here' : 'first layers'}. The dump shows the batch; check that the token file's ids are below model.vocab_size${sampleData ? " (the sample's data: re-run samples/prepare-data.ts)" : ''}.`,
  });
  return fixes;
}

/** The fixes for a person's own script, in its framework's words; none edits a file. */
function scriptFixes(e: AnomalyEvent, ctx: Exclude<AdviceContext, { framework: 'native' }>): Fix[] {
  const where =
    e.where.layer !== undefined && e.where.layer !== null
      ? ` (${e.where.layer}${e.where.op ? `, ${e.where.op}` : ''})`
      : '';
  return [
    {
      id: 'lower_lr',
      title: 'Lower the learning rate',
      detail: `Too large a step makes activations and the loss blow up${e.where.phase === 'optimizer' ? ', and this one happened in the optimizer' : ''}. ${learningRateAdvice(ctx)}`,
    },
    {
      id: 'clip',
      title: 'Clip gradients',
      detail: `One large gradient can push weights to Inf; 1.0 is the usual norm to clip at. ${clipAdvice(ctx)}`,
    },
    {
      id: 'bf16',
      title: 'Use bfloat16 instead of float16',
      detail: `float16 overflows above 65504; bfloat16 has float32's range. ${bf16Advice(ctx)}`,
    },
    {
      id: 'check_data',
      title: 'Check the data',
      detail: `A corrupt batch (token ids at or above the vocabulary size, empty or all-padding sequences, labels out of range) gives NaN in the first layers${where && e.where.phase === 'forward' ? `; this one appeared in the forward pass${where}` : ''}. Look at the batch your DataLoader gave at step ${e.step}.`,
    },
  ];
}

/**
 * The config change a fix makes to a native run config: a dotted path and its new value. Only
 * native runs have one: a launch spec has no training keys, and a person's script is theirs.
 */
export function fixEdit(id: FixId, ctx: AdviceContext): { path: string[]; value: string | number } | undefined {
  if (ctx.framework !== 'native') return undefined;
  const config = ctx.config;
  switch (id) {
    case 'lower_lr':
      return config.training?.learning_rate !== undefined
        ? { path: ['training', 'learning_rate'], value: config.training.learning_rate / 2 }
        : undefined;
    case 'clip':
      return { path: ['training', 'max_grad_norm'], value: 1.0 };
    case 'bf16':
      return { path: ['mixed_precision', 'param_dtype'], value: 'bfloat16' };
    case 'rollback_policy':
      return { path: ['stability', 'on_nan'], value: 'rollback' };
    case 'longer_warmup': {
      const next = suggestedWarmup(config.training?.warmup_steps ?? 0, config.training?.max_steps);
      return next !== undefined ? { path: ['training', 'warmup_steps'], value: next } : undefined;
    }
    case 'skip_spikes':
      return { path: ['stability', 'on_spike'], value: 'skip' };
    default:
      return undefined;
  }
}
