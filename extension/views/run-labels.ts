// How a run is named and summed up wherever it appears: runs view, status bar, quick picks.
import * as vscode from 'vscode';
import { jobSummary } from '../../runs/slurm/slurm-state';
import type { RunRecord } from '../../runs/watch/run-registry';
import type { RunStatus, RunWatch } from '../../runs/watch/run-watch';

/** The name the person gave the run, else its config's name, else its id. */
export function runTitle(record: RunRecord, watch?: RunWatch): string {
  return record.label ?? watch?.manifest?.name ?? record.name ?? record.runId;
}

/** When the run was first started (ms since the epoch), where known. */
export function startedAt(record: RunRecord, watch?: RunWatch): number | undefined {
  const created = watch?.manifest?.created;
  return created !== undefined ? created * 1000 : record.launchedAt;
}

/** "Nov 23, 14:05": enough to tell apart two runs of one config. */
export function formatStart(ms: number | undefined): string | undefined {
  if (ms === undefined) return undefined;
  return new Date(ms).toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

export function targetTitle(target: string): string {
  return target === 'local' ? 'This machine' : target;
}

/** "running · step 120/300 · loss 2.314" — or the connection trouble, when there is some. */
export function runSummary(watch: RunWatch | undefined): string {
  if (!watch) return 'not attached';
  const status = watch.status();
  const parts: string[] = [status];
  // A SLURM run: its job, and while it waits, why and until when.
  if (watch.job && status !== 'unknown') parts.push(jobSummary(watch.job, status));
  const h = watch.history;
  if (h.lastStep !== undefined) {
    const max = watch.manifest?.max_steps ?? maxStepsOf(h.start?.config);
    parts.push(`step ${h.lastStep}${max ? `/${max}` : ''}`);
    const loss = h.step.loss.lastValue;
    if (loss !== undefined) parts.push(`loss ${Number.isFinite(loss) ? loss.toFixed(3) : 'NaN'}`);
  }
  const c = watch.connection;
  if (c.state === 'reconnecting') parts.push(`reconnecting in ${Math.max(0, Math.round((c.retryAt - Date.now()) / 1000))} s`);
  else if (c.state === 'connecting' && watch.isLive()) parts.push('connecting…');
  return parts.join(' · ');
}

export function statusIcon(status: RunStatus | undefined, watch?: RunWatch): vscode.ThemeIcon {
  if (watch?.connection.state === 'reconnecting') return new vscode.ThemeIcon('debug-disconnect', new vscode.ThemeColor('list.warningForeground'));
  switch (status) {
    case 'running':
      return new vscode.ThemeIcon('sync~spin', new vscode.ThemeColor('charts.blue'));
    case 'starting':
      return new vscode.ThemeIcon('loading~spin');
    case 'completed':
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
