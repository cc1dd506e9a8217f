// How a run is named and summed up wherever it appears: runs view, status bar, quick picks.
import * as vscode from 'vscode';
import { defaultStart, distinctNames } from '../../core/runs/run-names';
import { jobSummary } from '../../runs/slurm/slurm-state';
import type { RunRecord } from '../../runs/watch/run-registry';
import type { RunStatus, RunWatch } from '../../runs/watch/run-watch';
import { runNonFinite } from '../webviews/run-advice-context';

/** The name the person gave the run, else its config's name, else its id. */
export function runTitle(record: RunRecord, watch?: RunWatch): string {
  return record.label ?? watch?.manifest?.name ?? record.name ?? record.runId;
}

/** The titles of several runs, each told apart from the others (core/runs/run-names.ts). */
export function distinctTitles(runs: ReadonlyArray<{ record: RunRecord; watch?: RunWatch }>): string[] {
  return distinctNames(
    runs.map(({ record, watch }) => {
      const started = startedAt(record, watch);
      return {
        title: runTitle(record, watch),
        ...(started !== undefined ? { startedAt: started } : {}),
        id: watch?.manifest?.run_id ?? record.runId,
      };
    }),
  );
}

/** One run's title among all the workspace knows: with its start time when another run has its title. */
export function titleAmong(
  record: RunRecord,
  all: readonly RunRecord[],
  watchOf: (record: RunRecord) => RunWatch | undefined,
): string {
  const key = `${record.target}:${record.runDir}`;
  const others = all.filter((r) => `${r.target}:${r.runDir}` !== key);
  const entries = [record, ...others].map((r) => ({ record: r, watch: watchOf(r) }));
  return distinctTitles(entries)[0];
}

/** When the run was first started (ms since the epoch), where known. */
export function startedAt(record: RunRecord, watch?: RunWatch): number | undefined {
  const created = watch?.manifest?.created;
  return created !== undefined ? created * 1000 : record.launchedAt;
}

/** "Nov 23, 14:05:12": enough to tell apart two runs of one config. */
export function formatStart(ms: number | undefined): string | undefined {
  return ms === undefined ? undefined : defaultStart(ms);
}

export function targetTitle(target: string): string {
  return target === 'local' ? 'This machine' : target;
}

/** "running · step 120/300 · loss 2.314" — or the connection trouble, when there is some. */
export function runSummary(watch: RunWatch | undefined): string {
  if (!watch) return 'not attached';
  const status = watch.status();
  // Any metric the run ends with as NaN or Inf (the loss, or a grad norm beside the Trainer's stand-in loss).
  const nonFinite = runNonFinite(watch);
  const parts: string[] = [nonFinite ? `${status}, ${nonFinite.text}` : status];
  // A SLURM run: its job, and while it waits, why and until when.
  if (watch.job && status !== 'unknown') parts.push(jobSummary(watch.job, status));
  const h = watch.history;
  if (h.lastStep !== undefined) {
    const max = watch.manifest?.max_steps ?? maxStepsOf(h.start?.config);
    parts.push(`step ${h.lastStep}${max ? `/${max}` : ''}`);
    const loss = h.step.loss.lastValue;
    if (loss !== undefined && !nonFinite?.lossHidden)
      parts.push(`loss ${Number.isFinite(loss) ? loss.toFixed(3) : 'NaN'}`);
  }
  const c = watch.connection;
  if (c.state === 'reconnecting')
    parts.push(`reconnecting in ${Math.max(0, Math.round((c.retryAt - Date.now()) / 1000))} s`);
  else if (c.state === 'connecting' && watch.isLive()) parts.push('connecting…');
  return parts.join(' · ');
}

export function statusIcon(status: RunStatus | undefined, watch?: RunWatch): vscode.ThemeIcon {
  if (watch?.connection.state === 'reconnecting')
    return new vscode.ThemeIcon('debug-disconnect', new vscode.ThemeColor('list.warningForeground'));
  switch (status) {
    case 'running':
      return new vscode.ThemeIcon('sync~spin', new vscode.ThemeColor('charts.blue'));
    case 'starting':
      return new vscode.ThemeIcon('loading~spin');
    case 'completed':
      // Completed with a metric NaN to the end (the loss, the grad norm, any tag): not a pass.
      if (watch && runNonFinite(watch) !== undefined)
        return new vscode.ThemeIcon('warning', new vscode.ThemeColor('list.warningForeground'));
      return new vscode.ThemeIcon('pass', new vscode.ThemeColor('testing.iconPassed'));
    case 'failed':
      return new vscode.ThemeIcon('error', new vscode.ThemeColor('testing.iconFailed'));
    case 'stopped':
      return new vscode.ThemeIcon('debug-stop');
    case 'queued':
      return new vscode.ThemeIcon('watch');
    case 'cancelled':
      return new vscode.ThemeIcon('circle-slash');
    case 'timed-out':
    case 'preempted':
      return new vscode.ThemeIcon('debug-pause', new vscode.ThemeColor('list.warningForeground'));
    default:
      return new vscode.ThemeIcon('circle-outline');
  }
}

export function maxStepsOf(config: unknown): number | undefined {
  const training = (config as { training?: { max_steps?: unknown } } | undefined)?.training;
  return typeof training?.max_steps === 'number' ? training.max_steps : undefined;
}
