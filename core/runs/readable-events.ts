// A metrics event as a line a person reads: the native runtime echoes every event of metrics.jsonl
// to its stdout as JSON, which the Log tab shows as "step 12  loss 3.4521  lr 3.00e-4 …" instead.
import { checkMetricsEvent, type MetricsEvent } from '../protocol/metrics';
import { formatCount, roundForDisplay } from './number-format';
import { describeAnomaly, formatBytes } from './run-history';

/** The line, readable, when it is one of the protocol's events; otherwise the line as it was. */
export function readableLine(line: string): string {
  const text = line.trim();
  if (!text.startsWith('{"') || !text.endsWith('}')) return line;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return line;
  }
  if (checkMetricsEvent(value) !== null) return line;
  return describeEvent(value as MetricsEvent);
}

export function describeEvent(e: MetricsEvent): string {
  const n = (v: number | null | undefined, digits = 4) =>
    v === null || v === undefined ? 'NaN' : roundForDisplay(v, digits);
  switch (e.type) {
    case 'run_start': {
      const params = e.n_params ? `, ${formatCount(e.n_params)} parameters` : '';
      const plan = e.memory_plan ? `, plan ${formatBytes(e.memory_plan.total)} per rank` : '';
      return `run ${e.run_id} started${e.start_step ? ` (resumed at step ${e.start_step})` : ''}: ${e.world.size} rank${e.world.size === 1 ? '' : 's'}${params}${plan}`;
    }
    case 'step': {
      const rank = e.rank !== undefined ? ` [rank ${e.rank}]` : '';
      // Fixed decimals: the columns of consecutive steps line up.
      const fixed = (v: number | null | undefined, f: (x: number) => string) =>
        v === null || v === undefined || !Number.isFinite(v) ? 'NaN' : f(v);
      const parts = [
        `step ${e.step}${rank}`,
        `loss ${fixed(e.loss, (x) => x.toFixed(4))}`,
        `lr ${fixed(e.lr, (x) => x.toExponential(2))}`,
        `grad norm ${fixed(e.grad_norm, (x) => x.toFixed(3))}`,
        `${formatCount(e.tokens_per_s)} tok/s`,
        `${fixed(e.step_ms, (x) => x.toFixed(1))} ms`,
      ];
      if (e.mfu !== undefined && e.mfu !== null) parts.push(`MFU ${(e.mfu * 100).toFixed(1)}%`);
      parts.push(`mem ${formatBytes(e.mem_peak)}`);
      if (e.skipped) parts.push('update skipped');
      return parts.join('  ');
    }
    case 'eval':
      return `eval at step ${e.step}: val loss ${n(e.val_loss)}`;
    case 'scalars':
      return `step ${e.step}: ${Object.entries(e.values)
        .map(([k, v]) => `${k} ${n(v ?? null)}`)
        .join('  ')}`;
    case 'checkpoint':
      return `checkpoint of step ${e.step} saved: ${e.path} (${formatBytes(e.bytes)})`;
    case 'anomaly':
      return `step ${e.step}: ${describeAnomaly(e)}`;
    case 'log':
      return `${e.level}: ${e.msg}`;
    case 'run_end':
      return `run ${e.status} at step ${e.step}${e.reason ? `: ${e.reason}` : ''}`;
    case 'processes':
      return `processes: ${e.processes
        .map((p) => `${p.role}${p.rank !== undefined ? ` ${p.rank}` : ''} ${p.name ? `${p.name} ` : ''}(pid ${p.pid})`)
        .join(', ')}`;
    case 'stop_requested':
      return e.already_stopping
        ? `stop requested again (${e.signal}): already stopping`
        : `stop requested (${e.signal})`;
    default:
      return JSON.stringify(e);
  }
}
