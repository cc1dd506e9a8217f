// Everything a run's metrics.jsonl has said so far, folded into per-metric series, chart markers
// and the facts the dashboard header shows. It applies the protocol's replacement rule: after a
// resume (run_start with start_step S) or a rollback, the later events of steps already seen
// replace the lost ones, so the history has every step exactly once. Every scalar, whoever logged
// it (native step events, the companion's scalars events, TensorBoard event files), is also kept
// per tag in `scalars`; tags that mean what a native chart shows share that chart's series.
import type { AnomalyEvent, LogEvent, MetricsEvent, RunEndEvent, RunStartEvent, StepEvent } from '../protocol/metrics';
import { MfuPeak } from './mfu-peak';
import { NonFiniteScalars, nonFiniteWord, type ScalarSource } from './nonfinite-scalars';
import { ScalarHistory } from './scalar-history';
import { NATIVE_TAGS, recogniseTag, type RecognisedMetric } from './scalar-tags';
import { StepSeries } from './step-series';

export type MarkerKind = 'checkpoint' | 'skipped' | 'spike' | 'nan' | 'inf';

export interface RunMarker {
  step: number;
  kind: MarkerKind;
  /** One line for a tooltip, e.g. "NaN in backward, layer 2 (attn.softmax)". */
  label: string;
}

/** Metrics with one value per optimizer step (from rank 0, or from rank-less step events). */
export const STEP_METRICS = ['loss', 'lr', 'grad_norm', 'tokens_per_s', 'step_ms', 'mfu', 'time'] as const;
export type StepMetric = (typeof STEP_METRICS)[number];

const LOG_LINES_KEPT = 200;

/** Which output a run's printed metrics are read from, in which format, and whether its steps are counted logs. */
export interface PrintedSource {
  file: 'stdout' | 'stderr';
  /** The format's name as a person reads it ("nanoGPT", "Hugging Face Trainer"). */
  format: string;
  /** The script printed no step numbers: the x axis counts its logs. */
  counted: boolean;
}

export class RunHistory {
  readonly step: Record<StepMetric, StepSeries>;
  readonly valLoss = new StepSeries();
  /** When each validation loss was logged. */
  private readonly valLossTimes = new StepSeries();
  /** Every scalar tag: the native metrics under NATIVE_TAGS, and whatever else the run logged. */
  readonly scalars = new ScalarHistory();
  /** The tag each recognised metric is drawn from (the first tag that meant it). */
  private readonly boundTags = new Map<RecognisedMetric, string>();
  /** Peak bytes per rank (the runtime's allocator, per step). */
  readonly memoryByRank = new Map<number, StepSeries>();
  /** Resident memory per rank: the process's RSS (step.mem_rss) and, on GPUs, NVML's memory in use (step.gpu.mem_used). */
  readonly residentByRank = new Map<number, StepSeries>();
  readonly gpuUsedByRank = new Map<number, StepSeries>();
  private markerList: RunMarker[] = [];
  /** Every anomaly the run reported, including ones from work a resume replaced. */
  readonly anomalies: AnomalyEvent[] = [];
  /** Every logged scalar that was NaN or Inf, by its first such step per tag and rank, from every source (kept across resumes, like anomalies). */
  readonly nonFinite = new NonFiniteScalars();
  readonly logs: LogEvent[] = [];
  /** Every rank an event or a printed line named (step, scalars, anomaly, log events; launcher-marked lines): a floor of the world's size. */
  readonly ranksReported = new Set<number>();
  /** MFU's peak as the run states it (raised by later steps), and the MFU values shown at 100%. */
  readonly mfuPeak = new MfuPeak();
  /** The latest run_start (a resumed run has several). */
  start: RunStartEvent | undefined;
  /** The first run_start's time: when the run began. */
  firstStartTime: number | undefined;
  end: RunEndEvent | undefined;
  /** Number of events applied; a cheap change counter for views. */
  eventCount = 0;
  private sawWholeRunSteps = false;
  /** Each start of the run (a resume or "Continue training" is another): when it began, its latest event, its end. */
  private readonly attempts: Array<{ start: number; last: number; end?: number }> = [];
  /** The run wrote scalars events (the companion's fsdp_studio.log, its callbacks). */
  loggedScalars = false;
  /** Where printed metrics came from, once a line was recognised (undefined: none so far). */
  printed: PrintedSource | undefined;

  constructor() {
    this.step = Object.fromEntries(STEP_METRICS.map((m) => [m, new StepSeries()])) as Record<StepMetric, StepSeries>;
  }

  get markers(): readonly RunMarker[] {
    return this.markerList;
  }

  /** Last completed optimizer step (of the loss, else of any scalar), or undefined before the first. */
  get lastStep(): number | undefined {
    return this.step.loss.lastStep ?? this.scalars.lastStep();
  }

  /**
   * The first step of the NaN (or Inf) the loss has been since, when its last value is not finite:
   * a run that completed so learned nothing after that step, whatever its status says.
   */
  nonFiniteLossSince(): number | undefined {
    const { steps, values } = this.step.loss;
    let i = values.length - 1;
    if (i < 0 || Number.isFinite(values[i])) return undefined;
    while (i > 0 && !Number.isFinite(values[i - 1])) i--;
    return steps[i];
  }

  /** When the latest step was logged (seconds since the epoch), of the loss or of any scalar; undefined before the first. */
  get lastStepTime(): number | undefined {
    let last = this.step.time.lastValue;
    for (const tag of this.scalars.tags()) {
      const t = this.scalars.get(tag)!.wallTimes.lastValue;
      if (t !== undefined && Number.isFinite(t) && (last === undefined || t > last)) last = t;
    }
    return last;
  }

  /** The tag a recognised metric is drawn from, if the run logged one. */
  tagOf(metric: RecognisedMetric): string | undefined {
    return this.boundTags.get(metric);
  }

  apply(event: MetricsEvent): void {
    this.eventCount++;
    const rank = event.type === 'anomaly' ? event.where.rank : 'rank' in event ? event.rank : undefined;
    if (typeof rank === 'number') this.ranksReported.add(rank);
    const attempt = this.attempts[this.attempts.length - 1];
    if (attempt && event.type !== 'run_start' && event.time > attempt.last) attempt.last = event.time;
    switch (event.type) {
      case 'run_start':
        this.attempts.push({ start: event.time, last: event.time });
        this.firstStartTime ??= event.time;
        this.start = event;
        this.mfuPeak.onRunStart(event);
        this.end = undefined;
        // Work after start_step was lost; its events are replaced by the ones that follow. A run
        // that does not say (a person's own command, relaunched) keeps its history: whatever steps
        // it logs again replace the old ones by the series' own rule.
        if (event.start_step !== undefined) this.rewindTo(event.start_step + 1);
        break;
      case 'step':
        this.applyStep(event);
        break;
      case 'eval':
        this.bindTag('val_loss', NATIVE_TAGS.val_loss);
        this.valLoss.set(event.step, event.val_loss);
        this.valLossTimes.set(event.step, event.time);
        break;
      case 'scalars':
        this.loggedScalars = true;
        // Only rank 0 logs scalars (the companion's log()), unless the event names its rank.
        for (const [tag, value] of Object.entries(event.values))
          this.applyScalar(tag, event.step, value ?? null, event.time, undefined, {
            rank: event.rank ?? 0,
            source: 'companion',
          });
        break;
      case 'checkpoint':
        this.addMarker({
          step: event.step,
          kind: 'checkpoint',
          label: `checkpoint ${event.path} (${formatBytes(event.bytes)})`,
        });
        break;
      case 'anomaly':
        this.anomalies.push(event);
        this.addMarker({ step: event.step, kind: event.kind, label: describeAnomaly(event) });
        break;
      case 'log':
        this.logs.push(event);
        if (this.logs.length > LOG_LINES_KEPT) this.logs.splice(0, this.logs.length - LOG_LINES_KEPT);
        break;
      case 'run_end':
        this.end = event;
        if (attempt && attempt.end === undefined) attempt.end = event.time;
        break;
    }
  }

  /**
   * Steps per second over the last `window` steps of the latest start, from the events' own times:
   * a run continued or resumed after a pause is timed on its new steps only, not across the gap.
   */
  stepsPerSecond(window = 20): number | undefined {
    const t = this.step.time;
    if (t.length < 2) return undefined;
    const last = t.length - 1;
    let first = Math.max(0, last - window);
    const since = this.start?.time;
    while (since !== undefined && first < last && t.values[first] < since) first++;
    const dt = t.values[last] - t.values[first];
    const ds = t.steps[last] - t.steps[first];
    return dt > 0 && ds > 0 ? ds / dt : undefined;
  }

  /**
   * Seconds the run has been running, in all its starts together: from each run_start to its
   * run_end (or its last event, for a start that ended without one), the idle time between a stop
   * and a resume or "Continue training" left out. `now` closes the latest start while it runs.
   */
  activeSeconds(now?: number): number {
    let total = 0;
    this.attempts.forEach((a, i) => {
      const latest = i === this.attempts.length - 1;
      const until = a.end ?? (latest && now !== undefined ? Math.max(now, a.last) : a.last);
      total += Math.max(0, until - a.start);
    });
    return total;
  }

  /** Seconds of the starts that have ended: activeSeconds without the latest start while it runs. */
  activeBefore(): number {
    const running = this.runningSince !== undefined;
    return this.attempts
      .slice(0, running ? -1 : undefined)
      .reduce((sum, a) => sum + Math.max(0, (a.end ?? a.last) - a.start), 0);
  }

  /** When the latest start began, while it has not ended (undefined once it has, or before any). */
  get runningSince(): number | undefined {
    const a = this.attempts[this.attempts.length - 1];
    return a && a.end === undefined ? a.start : undefined;
  }

  /** Seconds until max_steps at the recent pace; undefined when unknown or finished. */
  etaSeconds(maxSteps: number | undefined): number | undefined {
    const last = this.lastStep;
    const rate = this.stepsPerSecond();
    if (this.end || maxSteps === undefined || last === undefined || rate === undefined || last >= maxSteps)
      return undefined;
    return (maxSteps - last) / rate;
  }

  /**
   * One scalar from any source. A tag seen for the first time that means a native chart's metric
   * (and that metric has no tag yet) is drawn in that chart. `value` as logged: a NaN or Inf (or
   * null, the protocol's "not finite") is noted in `nonFinite` with `from`'s rank and source, and
   * stored as not finite.
   */
  applyScalar(
    tag: string,
    step: number,
    value: number | null,
    wallTime: number,
    metric: RecognisedMetric | null = recogniseTag(tag) ?? null,
    from: { rank?: number | null; source?: ScalarSource } = {},
  ): void {
    this.eventCount++;
    const attempt = this.attempts[this.attempts.length - 1];
    if (attempt && attempt.end === undefined && wallTime > attempt.last) attempt.last = wallTime;
    if (!this.scalars.get(tag) && metric && !this.boundTags.has(metric)) this.bindTag(metric, tag);
    const began = this.nonFinite.note(
      { tag, step, rank: from.rank ?? null, metric, source: from.source ?? 'tensorboard', time: wallTime },
      value,
    );
    // The native runtime marks its own NaN with its anomaly event; any other writer's is marked here.
    if (began && began.source !== 'runtime')
      this.addMarker({
        step,
        kind: began.kind === 'inf' ? 'inf' : 'nan',
        label: `${tag} ${nonFiniteWord(began.kind)}`,
      });
    this.scalars.add(tag, step, value !== null && Number.isFinite(value) ? value : null, wallTime);
  }

  /**
   * The values of one step a script printed (runs/watch/decoders/printed/): each recogniser says what
   * its values mean, so a name that would read as the loss elsewhere (nanoGPT's held-out "train
   * loss") is not taken for it. `source` names where they were read, for the header.
   */
  applyPrinted(
    step: number,
    values: ReadonlyArray<{ tag: string; value: number; metric: RecognisedMetric | null }>,
    wallTime: number,
    source: PrintedSource,
    rank?: number,
  ): void {
    this.printed = source;
    if (rank !== undefined) this.ranksReported.add(rank);
    for (const v of values)
      this.applyScalar(v.tag, step, v.value, wallTime, v.metric, { rank: rank ?? null, source: 'printed' });
  }

  /** Makes `tag` the source of a recognised metric: its values live in that chart's series. */
  private bindTag(metric: RecognisedMetric, tag: string): void {
    if (this.boundTags.has(metric)) return;
    this.boundTags.set(metric, tag);
    const values = metric === 'val_loss' ? this.valLoss : this.step[metric];
    // The loss's wall times are the run's step times (steps per second, ETA).
    const times = metric === 'val_loss' ? this.valLossTimes : metric === 'loss' ? this.step.time : new StepSeries();
    this.scalars.bind(tag, values, times);
  }

  private applyStep(event: StepEvent): void {
    // Every rank's non-finite loss or grad norm is noted, not only the rank the charts draw.
    for (const metric of ['loss', 'grad_norm'] as const)
      this.nonFinite.note(
        {
          tag: NATIVE_TAGS[metric],
          step: event.step,
          rank: event.rank ?? null,
          metric,
          source: 'runtime',
          time: event.time,
        },
        event[metric],
      );
    const rank = event.rank ?? 0;
    const memory = this.memoryByRank.get(rank) ?? new StepSeries();
    this.memoryByRank.set(rank, memory);
    memory.set(event.step, event.mem_peak);
    if (event.mem_rss !== undefined) seriesOf(this.residentByRank, rank).set(event.step, event.mem_rss);
    const gpuUsed = event.gpu?.mem_used;
    if (typeof gpuUsed === 'number') seriesOf(this.gpuUsedByRank, rank).set(event.step, gpuUsed);
    // Step metrics come from rank-less (whole-run) events, or from rank 0 where there are none.
    if (event.rank === undefined) this.sawWholeRunSteps = true;
    else if (event.rank !== 0 || this.sawWholeRunSteps) return;
    const last = this.step.loss.lastStep;
    // A step seen again is a replay after a rollback: the old timeline from here on is void.
    if (last !== undefined && event.step <= last) this.rewindTo(event.step);
    if (!this.boundTags.has('loss')) this.bindNativeSteps();
    const s = this.step;
    s.loss.set(event.step, event.loss);
    s.lr.set(event.step, event.lr);
    s.grad_norm.set(event.step, event.grad_norm);
    s.tokens_per_s.set(event.step, event.tokens_per_s);
    s.step_ms.set(event.step, event.step_ms);
    s.time.set(event.step, event.time);
    this.mfuPeak.onStep(event);
    if (event.mfu !== undefined) s.mfu.set(event.step, this.mfuPeak.cap(event.mfu));
    if (event.skipped) this.addMarker({ step: event.step, kind: 'skipped', label: 'update skipped' });
  }

  /** The native step events' metrics as scalar tags, sharing their series and their step times. */
  private bindNativeSteps(): void {
    for (const metric of ['loss', 'lr', 'grad_norm', 'tokens_per_s', 'step_ms', 'mfu'] as const) {
      this.boundTags.set(metric, NATIVE_TAGS[metric]);
      this.scalars.bind(NATIVE_TAGS[metric], this.step[metric], this.step.time);
    }
  }

  /** Forgets every step-indexed value at or after `step`. Anomaly markers stay: they happened. */
  private rewindTo(step: number): void {
    for (const series of Object.values(this.step)) series.truncateFrom(step);
    this.valLoss.truncateFrom(step);
    this.valLossTimes.truncateFrom(step);
    this.scalars.truncateFrom(step);
    for (const byRank of [this.memoryByRank, this.residentByRank, this.gpuUsedByRank])
      for (const series of byRank.values()) series.truncateFrom(step);
    this.markerList = this.markerList.filter((m) => m.step < step || isAnomalyKind(m.kind));
  }

  private addMarker(marker: RunMarker): void {
    const same = this.markerList.findIndex((m) => m.step === marker.step && m.kind === marker.kind);
    if (same >= 0) this.markerList[same] = marker;
    else this.markerList.push(marker);
  }
}

function seriesOf(byRank: Map<number, StepSeries>, rank: number): StepSeries {
  let s = byRank.get(rank);
  if (!s) byRank.set(rank, (s = new StepSeries()));
  return s;
}

function isAnomalyKind(kind: MarkerKind): boolean {
  return kind === 'nan' || kind === 'inf' || kind === 'spike';
}

/** "NaN in backward, layer 2 (attn.softmax); skipped" — what an anomaly says in one line. */
export function describeAnomaly(a: AnomalyEvent): string {
  const what =
    a.kind === 'spike'
      ? `${a.metric ?? 'loss'} spike${a.zscore != null ? ` (z=${a.zscore.toFixed(1)})` : ''}`
      : `${a.kind === 'nan' ? 'NaN' : 'Inf'} in ${a.where.phase}`;
  const layer = a.where.layer !== undefined && a.where.layer !== null ? `, layer ${a.where.layer}` : '';
  const op = a.where.op ? ` (${a.where.op})` : '';
  const action =
    a.action === 'rollback' && a.rollback_to !== undefined
      ? `rolled back to step ${a.rollback_to}`
      : a.action === 'report'
        ? 'reported'
        : a.action === 'skip'
          ? 'update skipped'
          : 'run stopped';
  return `${what}${layer}${op}; ${action}`;
}

export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v >= 100 || u === 0 ? v.toFixed(0) : v.toFixed(1)} ${units[u]}`;
}
