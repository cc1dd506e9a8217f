// The dashboard's header for a run, from its watch: status and why it ended, step and ETA, elapsed
// time and tokens seen, the long operation under way (start-up, first step, checkpoint save),
// config summary, and which actions apply.
import type { DashboardHeader } from '../../core/panels/dashboard-messages';
import { checkpointExpectedAfter } from '../../core/runs/checkpoint-schedule';
import { formatCount } from '../../core/runs/number-format';
import { runPhase, tokensSeen } from '../../core/runs/run-phase';
import { uncoveredNonFinite } from '../../core/runs/anomaly-report';
import { worldLine, worldWords, type WorldWords } from '../../core/runs/world-words';
import type { Spike } from '../../core/runs/spikes';
import type { RunRecord } from '../../runs/watch/run-registry';
import type { RunWatch } from '../../runs/watch/run-watch';
import { maxStepsOf, runTitle } from '../views/run-labels';
import { runNonFinite } from './run-advice-context';

export function dashboardHeader(watch: RunWatch, record: RunRecord, spikes: readonly Spike[]): DashboardHeader {
  const h = watch.history;
  const config = (h.start?.config ?? watch.manifest?.config ?? {}) as ConfigShape;
  const maxSteps = watch.manifest?.max_steps ?? maxStepsOf(config);
  const status = watch.status();
  const reason = watch.endReason();
  const live = watch.isLive();
  // A run that ended without run_end has no ETA (and no "live"): it is over.
  const eta = live ? h.etaSeconds(maxSteps) : undefined;
  const c = watch.connection;
  const lastLoss = h.step.loss.lastValue;
  const startedAt = h.firstStartTime ?? watch.manifest?.created;
  const endedAt = live ? undefined : (h.end?.time ?? h.step.time.lastValue ?? watch.manifest?.updated);
  const tokens = tokensSeen(h);
  const nonFinite = runNonFinite(watch, record);
  const command = watch.manifest?.kind === 'command' || Array.isArray(config.command);
  const metrics = command ? commandMetrics(watch) : undefined;
  const phase = runPhase(h, {
    live,
    ...(watch.manifest?.created !== undefined ? { launchedAt: watch.manifest.created } : {}),
    savesAfter: (step) => checkpointExpectedAfter(step, h.start?.config ?? watch.manifest?.config, watch.stopRequested),
    ...(metrics ? { command: { sources: metrics.reading } } : {}),
  });
  const summary: Array<[string, string]> =
    watch.ref.format === 'tensorboard'
      ? [
          [
            'logs',
            `TensorBoard log folder, ${watch.logFiles.length} event file${watch.logFiles.length === 1 ? '' : 's'}`,
          ],
        ]
      : configSummary(
          config,
          h.start?.n_params,
          h.start?.world.size ?? watch.manifest?.world.size,
          commandWorld(watch),
        );
  if (metrics?.found) summary.push(['metrics', metrics.found]);
  // A command that has said nothing the watch can chart: say what is read, and what to add.
  const waitedLong = live && h.start !== undefined && Date.now() / 1000 - h.start.time > NO_METRICS_AFTER_S;
  const metricsNote =
    metrics && h.lastStep === undefined && (!live || waitedLong) && status !== 'queued' && status !== 'starting'
      ? noMetricsNote(metrics.reading, live)
      : undefined;
  return {
    runId: watch.manifest?.run_id ?? record.runId,
    name: runTitle(record, watch),
    target: record.target,
    runKind: watch.ref.format === 'tensorboard' ? 'tensorboard' : command ? 'command' : 'native',
    status,
    ...(reason && status !== 'completed' && status !== 'running' ? { reason } : {}),
    ...(h.lastStep !== undefined ? { step: h.lastStep } : {}),
    ...(maxSteps !== undefined ? { maxSteps } : {}),
    // The Trainer's stand-in for a NaN loss (logging_nan_inf_filter) is not shown as the run's loss.
    ...(lastLoss !== undefined && !nonFinite?.lossHidden ? { loss: Number.isFinite(lastLoss) ? lastLoss : null } : {}),
    ...(eta !== undefined ? { etaSeconds: eta } : {}),
    ...(startedAt !== undefined ? { startedAt } : {}),
    ...(endedAt !== undefined ? { endedAt } : {}),
    // Elapsed counts the run's starts, not the pauses between them (needs run_start: a TensorBoard folder has none).
    ...(h.firstStartTime !== undefined
      ? {
          activeBefore: live ? h.activeBefore() : h.activeSeconds(),
          ...(live && h.runningSince !== undefined ? { runningSince: h.runningSince } : {}),
        }
      : {}),
    ...(tokens !== undefined ? { tokensSeen: tokens } : {}),
    ...(phase ? { phase } : {}),
    // The follower may watch an ended run's file a poll longer: nothing of an ended run is "live".
    connection: c.state === 'reconnecting' ? c : { state: c.state === 'live' && !live ? 'closed' : c.state },
    summary,
    ...(metricsNote ? { metricsNote } : {}),
    ...(nonFinite ? { nanSince: nonFinite.step, nanText: nonFinite.text } : {}),
    problems: watch.problems.length,
    // Located anomalies and the logged NaNs they do not stand for: the NaN view lists both.
    anomalies:
      h.anomalies.filter((a) => a.kind !== 'spike').length + uncoveredNonFinite(h.nonFinite.list(), h.anomalies).length,
    spikes: spikes.length,
    lossSpikes: spikes.filter((s) => s.metric === 'loss').length,
    canStop: live,
    canResume: !live && status !== 'completed' && status !== 'unknown',
  };
}

/** A live command with no step after this long gets the note on what is read and what to add. */
const NO_METRICS_AFTER_S = 30;

/** What a command run's metrics are read from, and what has given some so far. */
function commandMetrics(watch: RunWatch): { reading: string; found?: string } {
  const h = watch.history;
  const tensorboard = watch.manifest?.logs?.tensorboard;
  const reading = `what it prints (stdout and stderr)${tensorboard ? `, TensorBoard files in ${tensorboard}` : ''} and fsdp_studio.log calls`;
  const found: string[] = [];
  const p = h.printed;
  if (p) {
    const notes = [
      p.counted ? 'the step is the number of the log: the Trainer prints none' : '',
      watch.printedTimesEstimated ? 'times of lines printed before the watch began are estimated' : '',
    ].filter(Boolean);
    found.push(`${p.format} lines in ${p.file}${notes.length ? ` (${notes.join('; ')})` : ''}`);
  }
  if (watch.logFiles.length)
    found.push(`TensorBoard, ${watch.logFiles.length} event file${watch.logFiles.length === 1 ? '' : 's'}`);
  if (h.loggedScalars) found.push('fsdp_studio.log');
  return { reading, ...(found.length ? { found: found.join('; ') } : {}) };
}

function noMetricsNote(reading: string, live: boolean): string {
  return (
    `${live ? 'No step read yet' : 'No metrics'}: FSDP Studio reads ${reading}, and found no step in them. ` +
    "Printed lines it recognises: nanoGPT's `iter N: loss X`, the Hugging Face Trainer's dicts, Lightning's progress bar, torchtitan's step lines, and `key=value` or `key: value` pairs on a line with `step N`. " +
    "To chart yours, add to the launch spec `metrics: {pattern: 'it (?<step>\\d+) L=(?<loss>[\\d.]+)'}` (a named group step and one per value), " +
    'or name the folder your SummaryWriter writes in `logs: {tensorboard: DIR}`, or call `fsdp_studio.log(step, loss=loss)` in the script.'
  );
}

interface ConfigShape {
  command?: string[];
  launcher?: string;
  model?: { d_model?: number; n_layers?: number; n_heads?: number; vocab_size?: number };
  data?: { seq_len?: number };
  training?: {
    batch_size_per_gpu?: number;
    gradient_accumulation_steps?: number;
    learning_rate?: number;
    schedule?: string;
  };
  fsdp?: { sharding_strategy?: string };
  mixed_precision?: { param_dtype?: string };
  launch?: { device?: string };
}

/**
 * A person's command's world in words: run.json's (the supervisor's, which counts the ranks that
 * start where they are not the command's count), else run_start's, with the ranks its events named.
 */
function commandWorld(watch: RunWatch): WorldWords | undefined {
  const world = watch.manifest?.world ?? (watch.history.start ? { size: watch.history.start.world.size } : undefined);
  return world && worldWords(world, watch.manifest?.command, watch.history.ranksReported.size);
}

function configSummary(
  c: ConfigShape,
  nParams: number | undefined,
  worldSize: number | undefined,
  command: WorldWords | undefined,
): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  // A person's own command (a launch spec): what ran, and on how many ranks.
  if (Array.isArray(c.command))
    return [
      ['command', c.command.join(' ')],
      ['world', worldLine(command ?? worldWords({ size: worldSize ?? 1 }, c.command), c.launcher)],
    ];
  const m = c.model;
  if (m)
    out.push([
      'model',
      `${m.n_layers ?? '?'} layers × d${m.d_model ?? '?'}, ${m.n_heads ?? '?'} heads${nParams ? `, ${formatCount(nParams)} params` : ''}`,
    ]);
  out.push([
    'world',
    `${worldSize ?? 1} × ${c.launch?.device ?? 'cpu'}${c.fsdp?.sharding_strategy ? `, ${c.fsdp.sharding_strategy}` : ''}${c.mixed_precision?.param_dtype ? `, ${c.mixed_precision.param_dtype}` : ''}`,
  ]);
  const t = c.training;
  if (t?.batch_size_per_gpu !== undefined) {
    out.push([
      'batch',
      `${t.batch_size_per_gpu ?? '?'} × ${t.gradient_accumulation_steps ?? 1} accum × ${c.data?.seq_len ?? '?'} tokens`,
    ]);
    if (t.learning_rate !== undefined) out.push(['lr', `${t.learning_rate}${t.schedule ? ` (${t.schedule})` : ''}`]);
  }
  return out;
}
