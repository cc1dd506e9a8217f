// Recognisers of the step lines training scripts print: each turns one line of stdout or stderr
// into the scalars of one step, or says nothing. Tried in order, the most specific first: a
// person's own pattern (the launch spec's metrics.pattern), then the formats of the common
// trainers, then `key=value` / `key: value` pairs on a line that names its step. The sample lines
// each one is written against, with where they come from, are in test/unit/printed-metrics.test.ts.
import { compileMetricsPattern } from '../../../../core/config/metrics-pattern';
import { plainLine, printedValue, PRINTED_PREFIX, rankOfLine, type PrintedValue } from './printed-values';

export type PrintedFormat = 'pattern' | 'nanogpt' | 'hf-trainer' | 'lightning' | 'torchtitan' | 'pairs';

/** What each format is called where a person reads it. */
export const FORMAT_NAMES: Record<PrintedFormat, string> = {
  pattern: 'your metrics pattern',
  nanogpt: 'nanoGPT',
  'hf-trainer': 'Hugging Face Trainer',
  lightning: 'Lightning progress bar',
  torchtitan: 'torchtitan',
  // Said as "<name> lines in stdout.log" (the dashboard's header): "key=value lines".
  pairs: 'key=value',
};

export interface PrintedStep {
  step: number;
  values: PrintedValue[];
  format: PrintedFormat;
  /**
   * The script printed no step number (the Hugging Face Trainer's dicts): `step` counts its
   * training logs, 1, 2, 3…
   */
  counted?: boolean;
  /** The line named no step (a validation line between steps): its step is inferred, not printed. */
  between?: boolean;
  /** The rank a launcher marked the line with ("[rank 0] "), where it did. */
  rank?: number;
}

/**
 * Reads the lines of one run in order (a recogniser may need what came before: the Trainer's
 * count of logs, Lightning's batches per epoch). Lines marked as another rank's than rank 0 are
 * not read: every rank prints the same step, rank 0's is the run's.
 */
export class PrintedMetricsReader {
  private readonly patterns: RegExp[];
  private trainerLogs = 0;

  /** `patterns`: a person's own regular expressions, each with a named group `step` (core/config/metrics-pattern.ts, as the language server checks them). */
  constructor(patterns: readonly string[] = []) {
    this.patterns = patterns.map((p) => compileMetricsPattern(p)).filter((p): p is RegExp => p instanceof RegExp);
  }

  read(rawLine: string): PrintedStep | undefined {
    const { rank, text } = rankOfLine(plainLine(rawLine));
    if (rank !== undefined && rank !== 0) return undefined;
    if (!text || text.length > 4096) return undefined;
    const step = this.stepOf(text);
    return step && rank !== undefined ? { ...step, rank } : step;
  }

  private stepOf(text: string): PrintedStep | undefined {
    for (const p of this.patterns) {
      const s = fromPattern(p, text);
      if (s) return this.seen(s);
    }
    return this.seen(
      nanoGptIter(text) ??
        nanoGptEval(text) ??
        this.trainerDict(text) ??
        lightningBar(text) ??
        torchtitan(text) ??
        pairsWithStep(text) ??
        this.validationLine(text),
    );
  }

  /** The last step a line named: a validation line that names none belongs next to it. */
  private lastStep: number | undefined;

  private seen(s: PrintedStep | undefined): PrintedStep | undefined {
    if (s && !s.between) this.lastStep = s.step;
    return s;
  }

  /**
   * A validation loss printed on a line of its own, without a step: build-nanogpt's
   * `validation loss: 3.0725`, or `val loss 2.31`. build-nanogpt evaluates at the top of step s,
   * before it prints step s's line, so the value is the next step's: the last step seen + 1 (0
   * before any). A script that evaluates after printing its step is drawn one step late.
   */
  private validationLine(text: string): PrintedStep | undefined {
    const m = VALIDATION_LINE.exec(text);
    const v = m ? printedValue(`${m[1]}_loss`, m[2]) : undefined;
    if (!v) return undefined;
    return { step: this.lastStep === undefined ? 0 : this.lastStep + 1, values: [v], format: 'pairs', between: true };
  }

  /**
   * The Hugging Face Trainer prints each log as a Python dict (transformers 5: values as strings,
   * `{'loss': '2.345', 'grad_norm': '1.2', 'learning_rate': '5e-05', 'epoch': '0.1'}`), without the
   * step: a dict with a loss is the next training log; an eval dict belongs to the last one.
   */
  private trainerDict(text: string): PrintedStep | undefined {
    if (!/^\{\s*['"]/.test(text) || !text.endsWith('}')) return undefined;
    const pairs = [...text.matchAll(/['"]([\w./-]+)['"]\s*:\s*(['"]?)([^'",}]*)\2/g)].map((m) => [m[1], m[3]] as const);
    const keys = new Set(pairs.map(([k]) => k));
    // The run's totals at its end (train_runtime, an average train_loss): not a step.
    if (keys.has('train_runtime')) return undefined;
    const stepKey = pairs.find(([k]) => k === 'step' || k === 'global_step');
    const given = stepKey ? Number(stepKey[1]) : undefined;
    const isTrain = keys.has('loss');
    const isEval = [...keys].some((k) => k.startsWith('eval_'));
    if (!isTrain && !isEval) return undefined;
    if (isTrain && given === undefined) this.trainerLogs++;
    const step = given !== undefined && Number.isInteger(given) ? given : this.trainerLogs;
    const values = pairs
      .filter(([k]) => k !== 'step' && k !== 'global_step')
      .map(([k, v]) => printedValue(k, v))
      .filter((v): v is PrintedValue => !!v);
    if (!values.length) return undefined;
    return { step, values, format: 'hf-trainer', ...(given === undefined ? { counted: true } : {}) };
  }
}

function fromPattern(re: RegExp, text: string): PrintedStep | undefined {
  const m = re.exec(text);
  const g = m?.groups;
  if (!g || g.step === undefined) return undefined;
  const step = Number(g.step.replace(/,/g, ''));
  if (!Number.isInteger(step) || step < 0) return undefined;
  const values = Object.entries(g)
    .filter(([k, v]) => k !== 'step' && v !== undefined)
    .map(([k, v]) => {
      const [, num, unit] = /^\s*([^\s%a-z]+|nan|-?inf)\s*(%|ms|s)?\s*$/i.exec(v!) ?? [];
      return num !== undefined ? printedValue(k, num, unit ?? '') : undefined;
    })
    .filter((v): v is PrintedValue => !!v);
  return values.length ? { step, values, format: 'pattern' } : undefined;
}

/** nanoGPT's train.py: `iter 194: loss 2.5761, time 123.45ms, mfu 1.23%` (the MFU is -100.00% until measured). */
function nanoGptIter(text: string): PrintedStep | undefined {
  const m = /^iter (\d+): (loss .*)$/.exec(text);
  if (!m) return undefined;
  const values = segmentsOf(m[2])
    .map(pairOf)
    .filter((v): v is PrintedValue => !!v);
  return values.length ? { step: Number(m[1]), values, format: 'nanogpt' } : undefined;
}

/** nanoGPT's evaluation: `step 250: train loss 1.9843, val loss 2.0741` (its train loss is an estimate on held batches: not the loss chart's). */
function nanoGptEval(text: string): PrintedStep | undefined {
  const m = /^step (\d+): train loss (\S+), val loss (\S+)$/.exec(text);
  if (!m) return undefined;
  const train = printedValue('eval_train_loss', m[2]);
  const val = printedValue('val_loss', m[3]);
  const values = [...(train ? [{ ...train, metric: null }] : []), ...(val ? [val] : [])];
  return values.length ? { step: Number(m[1]), values, format: 'nanogpt' } : undefined;
}

/**
 * Lightning's progress bar (tqdm, on stderr, redrawn after a carriage return):
 * `Epoch 1:  45%|████▌     | 45/100 [00:02<00:02, 21.30it/s, v_num=0, train_loss_step=2.310]`.
 * The bar counts batches within the epoch: the step is epoch × batches per epoch + batch.
 */
function lightningBar(text: string): PrintedStep | undefined {
  const m =
    /^Epoch (\d+):\s*\d+%\|[^|]*\|\s*(\d+)\/(\d+)\s*\[[^,\]]*(?:,\s*[^,\]]*it\/s|,\s*[^,\]]*s\/it|,\s*\?it\/s)?(?:,\s*([^\]]*))?\]\s*$/.exec(
      text,
    );
  if (!m || !m[4]) return undefined;
  const [epoch, batch, perEpoch] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const values = m[4]
    .split(/,\s*/)
    .map((kv) => /^([\w./-]+)=(\S+)$/.exec(kv))
    .filter((kv): kv is RegExpExecArray => !!kv && kv[1] !== 'v_num')
    .map((kv) => {
      // train_loss_step: Lightning's name for the per-step value of self.log("train_loss", on_step=True, on_epoch=True).
      const v = printedValue(kv[1], kv[2]);
      if (v && v.metric === null && kv[1].endsWith('_step'))
        return { ...v, metric: printedValue(kv[1].slice(0, -5), kv[2])?.metric ?? null };
      return v;
    })
    .filter((v): v is PrintedValue => !!v);
  return values.length ? { step: epoch * perEpoch + batch, values, format: 'lightning' } : undefined;
}

/**
 * torchtitan's step and validation lines (its logger, on stdout, coloured; torchtitan 0.3.0
 * components/metrics.py): `[titan] 2026-11-26 00:52:13,861 - root - INFO - step: 10  loss:  7.23456
 * grad_norm:  1.2345  memory:  1.23GiB(2.34%)  tps: 12,346  tflops: 12.34  mfu: 3.45%` and
 * `… - validate step: 10  loss:  7.5000  memory: …  tps: 12,346`.
 */
function torchtitan(text: string): PrintedStep | undefined {
  const m = /(?:^|\s-\s)(validate )?step:\s*(\d+)\s{2,}(loss:.*)$/.exec(text);
  if (!m) return undefined;
  let values = labelledPairs(m[3].replace(/\((?:[^()]*)\)/g, ' '));
  if (m[1])
    values = values.map((v) => ({
      tag: v.tag.replace(PRINTED_PREFIX, `${PRINTED_PREFIX}validate_`),
      value: v.value,
      metric: v.metric === 'loss' ? 'val_loss' : null,
    }));
  return values.length ? { step: Number(m[2]), values, format: 'torchtitan' } : undefined;
}

const STEP_WORD = /\b(?:global[_ ]step|step|iteration|iter|it)\b\s*[:=#]?\s*(\d+)(?:\s*\/\s*\d+)?\s*:?/i;

/**
 * Any line that names its step and gives values as `key=value`, `key: value` or `key value`,
 * separated by commas, bars, semicolons or runs of spaces: `step 100 | loss 2.31 | lr 3e-4`,
 * `it=20 loss=1.92 grad_norm=0.8`, llm.c's `step 1/74: train loss 4.3679 (234.67 ms, 4364 tok/s)`.
 */
function pairsWithStep(text: string): PrintedStep | undefined {
  const m = STEP_WORD.exec(text);
  if (!m) return undefined;
  const rest = `${text.slice(0, m.index)} | ${text.slice(m.index + m[0].length)}`;
  const values = labelledPairs(rest);
  // A `key value` part between separators beside labelled ones: build-nanogpt's
  // `step 10 | loss: 9.12 | lr 6.0000e-05 | norm: 1.23`, whose learning rate has no colon.
  const tags = new Set(values.map((v) => v.tag));
  for (const segment of segmentsOf(rest)) {
    if (/[:=]/.test(segment)) continue;
    const v = pairOf(segment);
    if (v && !tags.has(v.tag)) values.push(v);
  }
  if (!values.length) return undefined;
  return { step: Number(m[1]), values, format: 'pairs' };
}

/** Every `key=value` and `key: value` of a text, however they are spaced (torchtitan pads its numbers). */
function labelledPairs(text: string): PrintedValue[] {
  const re = new RegExp(
    String.raw`(?<=^|[\s,|;])([A-Za-z][\w./-]*)\s*[:=]\s*(${NUMBER_WITH_COMMAS})\s*(%|ms|s\b|[KMGT]i?B)?`,
    'gi',
  );
  return [...text.matchAll(re)]
    .map((kv) => printedValue(kv[1], kv[2], kv[3] ?? ''))
    .filter((v): v is PrintedValue => !!v);
}

/** A line's parts between separators, thousands separators kept inside their numbers. */
function segmentsOf(text: string): string[] {
  return text
    .replace(/(\d),(?=\d{3}(?!\d))/g, '$1')
    .split(/\s*[,|;()\t]\s*|\s{2,}|\s+-\s+/)
    .map((s) => s.trim())
    .filter(Boolean);
}

const NUMBER = String.raw`[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|-?inf`;
const NUMBER_WITH_COMMAS = String.raw`[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?|${NUMBER}`;
const NAME = String.raw`[A-Za-z][\w./]*(?:\s[A-Za-z][\w./]*){0,2}`;
const KEY_VALUE = new RegExp(String.raw`^(${NAME})\s*(?:[:=]\s*|\s+)(${NUMBER})\s*(%|ms|s|[KMGT]i?B)?$`, 'i');
/** A validation loss on a line of its own: `validation loss: 3.0725` (build-nanogpt), `val loss 2.31`, `eval_loss=2.3`. */
const VALIDATION_LINE = new RegExp(String.raw`^(validation|valid|val|eval)[ _]loss\s*[:=]?\s*(${NUMBER})$`, 'i');
/** A value before its unit: llm.c's `(234.67 ms, 4364 tok/s)`. */
const VALUE_UNIT = new RegExp(String.raw`^(${NUMBER})\s*(ms|tok/s|tokens/s)$`, 'i');

function pairOf(segment: string): PrintedValue | undefined {
  const kv = KEY_VALUE.exec(segment);
  if (kv) return printedValue(kv[1], kv[2], kv[3] ?? '');
  const vu = VALUE_UNIT.exec(segment);
  if (vu) return vu[2].toLowerCase() === 'ms' ? printedValue('time', vu[1], 'ms') : printedValue(vu[2], vu[1]);
  return undefined;
}
