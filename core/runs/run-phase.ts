// What the dashboard header says while nothing new reaches the charts — start-up, the first step
// of a (re)start, a checkpoint save — and the run's totals: elapsed time and tokens seen.
import type { RunPhase } from '../panels/dashboard-messages';
import { formatCount } from './number-format';
import type { RunHistory } from './run-history';

export interface PhaseInputs {
  /** The run's processes are running (or starting). */
  live: boolean;
  /** When it was launched (run.json's `created`), epoch seconds: start-up is counted from here. */
  launchedAt?: number;
  /** Whether the trainer saves a checkpoint right after this step (its config's schedule). */
  savesAfter(step: number): boolean;
  /**
   * A person's own command (a launch spec), and what its metrics are read from: nothing is known
   * of its model or its steps until it logs one, so nothing is claimed.
   */
  command?: { sources: string };
}

/** The long operation a live run is in, or undefined when steps are coming. */
export function runPhase(h: RunHistory, inputs: PhaseInputs): RunPhase | undefined {
  if (!inputs.live || h.end) return undefined;
  const start = h.start;
  const lastTime = h.step.time.lastValue;
  const lastLog = h.logs.length ? h.logs[h.logs.length - 1] : undefined;
  if (!start) {
    const log = lastLog?.msg;
    return {
      label: inputs.command ? 'Starting the command' : 'Starting the trainer',
      ...(log ? { detail: log } : {}),
      since: inputs.launchedAt ?? lastLog?.time ?? Date.now() / 1000,
    };
  }
  if (inputs.command) {
    const last = h.lastStepTime;
    if (last !== undefined && last >= start.time) return undefined;
    return {
      label: 'Waiting for the first step',
      detail: `the command is running; its metrics are read from ${inputs.command.sources}`,
      since: start.time,
    };
  }
  // No step since the latest run_start: the model is built and the data open; the first step runs.
  if (lastTime === undefined || lastTime < start.time) {
    const resumed = start.start_step ? `resumed at step ${start.start_step}; ` : '';
    const params = start.n_params ? `${formatCount(start.n_params)} parameters, ` : '';
    return {
      label: 'Running the first step',
      detail: `${resumed}model and data ready (${params}${start.world.size} rank${start.world.size > 1 ? 's' : ''})`,
      since: start.time,
    };
  }
  const step = h.lastStep!;
  const saved = h.markers.some((m) => m.kind === 'checkpoint' && m.step >= step);
  if (!saved && inputs.savesAfter(step)) return { label: `Saving the checkpoint of step ${step}`, since: lastTime };
  return undefined;
}

interface TokenConfig {
  training?: { batch_size_per_gpu?: number; gradient_accumulation_steps?: number };
  data?: { seq_len?: number };
}

/**
 * Training tokens consumed up to the last step, all ranks: steps × the global batch in tokens from
 * the run's config, or, for a trainer that does not say, from its last step's throughput and time.
 */
export function tokensSeen(h: RunHistory): number | undefined {
  const step = h.lastStep;
  if (step === undefined) return undefined;
  const c = (h.start?.config ?? {}) as TokenConfig;
  const batch = c.training?.batch_size_per_gpu;
  const seq = c.data?.seq_len;
  if (batch && seq)
    return step * batch * (c.training?.gradient_accumulation_steps ?? 1) * seq * (h.start?.world.size ?? 1);
  const rate = h.step.tokens_per_s.lastValue;
  const ms = h.step.step_ms.lastValue;
  return rate !== undefined && ms !== undefined && Number.isFinite(rate * ms)
    ? Math.round((step * rate * ms) / 1000)
    : undefined;
}
