// The status bar item of the focused run (the last one launched, attached or looked at): status,
// step, loss, and connection trouble; a click opens its dashboard.
import * as vscode from 'vscode';
import type { Runs } from '../runs/runs';
import { runSummary, runTitle } from './run-labels';

const REFRESH_MS = 500;

export class RunStatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('fsdp.run', vscode.StatusBarAlignment.Left, 50);
  private readonly subscriptions: vscode.Disposable[];
  private pending: NodeJS.Timeout | undefined;

  constructor(private readonly runs: Runs) {
    this.item.name = 'FSDP run';
    this.subscriptions = [
      runs.onDidChange((w) => (w === undefined || w === runs.focused) && this.schedule()),
      runs.onDidChangeFocus(() => this.update()),
    ];
    this.update();
  }

  private schedule(): void {
    this.pending ??= setTimeout(() => {
      this.pending = undefined;
      this.update();
    }, REFRESH_MS);
  }

  private update(): void {
    const watch = this.runs.focused;
    const record = watch && this.runs.registry.get(watch.key);
    if (!watch || !record) {
      this.item.hide();
      return;
    }
    const failed = watch.status() === 'failed';
    const icon =
      watch.connection.state === 'reconnecting'
        ? '$(debug-disconnect)'
        : watch.isLive()
          ? '$(pulse)'
          : failed
            ? '$(error)'
            : '$(graph-line)';
    this.item.text = `${icon} ${runTitle(record, watch)}: ${runSummary(watch)}`;
    this.item.backgroundColor = failed ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
    const reason = failed ? watch.endReason() : undefined;
    this.item.tooltip = `${record.target === 'local' ? '' : `${record.target}:`}${record.runDir}${reason ? `\nFailed: ${reason}` : ''}\nClick to open the run dashboard`;
    this.item.command = { command: 'fsdp.openDashboard', title: 'Open run dashboard', arguments: [watch.key] };
    this.item.show();
  }

  dispose(): void {
    clearTimeout(this.pending);
    for (const s of this.subscriptions) s.dispose();
    this.item.dispose();
  }
}
