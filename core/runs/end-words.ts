// The words of a run's toasts, true to what the dashboard shows (issue 39, item 5): the step and
// loss of a run's end are the dashboard's, and Stop promises a checkpoint only of a run that saves one.
import { checkpointExpectedAfter } from './checkpoint-schedule';
import type { RunHistory } from './run-history';

/**
 * The step a run ended at, as the dashboard shows it: the last step it charts. run_end's own step
 * is the fallback: a person's command's supervisor does not know the trainer's step and writes 0.
 */
export function endStep(eventStep: number, history: RunHistory): number {
  return history.lastStep ?? eventStep;
}

/** "completed at step 60, loss 2.314": the dashboard's step and last loss. */
export function completedWords(name: string, eventStep: number, history: RunHistory): string {
  const loss = history.step.loss.lastValue;
  const shown = loss !== undefined && Number.isFinite(loss) ? `, loss ${loss.toFixed(3)}` : '';
  return `${name} completed at step ${endStep(eventStep, history)}${shown}.`;
}

/**
 * What Stop's progress says while the run stops. Our runtime saves a checkpoint when stopped (unless
 * its config turned checkpointing off); a person's command is only asked to end (SIGTERM): what it
 * does then is its own, so nothing is promised, and its last checkpoint, if it reported one, is named.
 */
export function stoppingWords(
  name: string,
  run: { command: boolean; config: unknown; history: RunHistory },
): { title: string; killNow: string } {
  const h = run.history;
  if (!run.command && checkpointExpectedAfter(h.lastStep ?? 0, run.config, true))
    return {
      title: `Stopping ${name}: finishing the step and saving a checkpoint…`,
      killNow: 'SIGKILL without waiting for its checkpoint',
    };
  const saved = [...h.markers].reverse().find((m) => m.kind === 'checkpoint');
  return {
    title: `Stopping ${name}: asked to end (SIGTERM)${saved ? `; its last checkpoint is at step ${saved.step}` : ''}…`,
    killNow: 'SIGKILL without waiting for it to end',
  };
}
