// The runs view in the activity bar: runs grouped by host, a status icon each, live step and loss
// in the description; runs of the same name are told apart by their start time, and the tooltip
// (plain text: run-tooltip.ts) has the run id. Refreshes at most a few times a second however fast
// events arrive.
import * as vscode from 'vscode';
import type { RunRecord } from '../../runs/watch/run-registry';
import { runKey } from '../../runs/watch/run-watch';
import type { Runs } from '../runs/runs';
import { formatStart, runSummary, runTitle, startedAt, statusIcon, targetTitle } from './run-labels';
import { runNonFinite } from '../webviews/run-advice-context';
import { runTooltip } from './run-tooltip';

const REFRESH_MS = 300;

/** `twin`: another run on the same host has the same title, so the start time goes beside it. */
export type RunsTreeNode =
  { kind: 'host'; target: string } | { kind: 'run'; key: string; record: RunRecord; twin?: boolean };

export class RunsTree implements vscode.TreeDataProvider<RunsTreeNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<RunsTreeNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private pending: NodeJS.Timeout | undefined;
  private readonly subscription: vscode.Disposable;

  constructor(private readonly runs: Runs) {
    this.subscription = runs.onDidChange(() => this.scheduleRefresh());
  }

  getChildren(node?: RunsTreeNode): RunsTreeNode[] {
    const records = this.runs.records();
    if (!node) {
      const targets = [...new Set(records.map((r) => r.target))].sort((a, b) =>
        a === 'local' ? -1 : b === 'local' ? 1 : a.localeCompare(b),
      );
      return targets.map((target) => ({ kind: 'host', target }));
    }
    if (node.kind === 'run') return [];
    const onHost = records.filter((r) => r.target === node.target);
    const titles = onHost.map((r) => runTitle(r, this.runs.existingWatch(runKey(r))));
    return onHost
      .map((record, i) => ({
        kind: 'run' as const,
        key: runKey(record),
        record,
        twin: titles.indexOf(titles[i]) !== titles.lastIndexOf(titles[i]),
      }))
      .sort(
        (a, b) =>
          (b.record.launchedAt ?? 0) - (a.record.launchedAt ?? 0) || b.record.runId.localeCompare(a.record.runId),
      );
  }

  getTreeItem(node: RunsTreeNode): vscode.TreeItem {
    if (node.kind === 'host') {
      const item = new vscode.TreeItem(targetTitle(node.target), vscode.TreeItemCollapsibleState.Expanded);
      item.iconPath = new vscode.ThemeIcon(node.target === 'local' ? 'vm' : 'remote');
      item.contextValue = 'host';
      item.id = `host:${node.target}`;
      return item;
    }
    const watch = this.runs.existingWatch(node.key);
    const title = runTitle(node.record, watch);
    const started = formatStart(startedAt(node.record, watch));
    const item = new vscode.TreeItem(
      node.twin && started ? `${title} (${started})` : title,
      vscode.TreeItemCollapsibleState.None,
    );
    item.id = node.key;
    item.description = runSummary(watch);
    item.iconPath = statusIcon(watch?.status(), watch);
    // run.live, run.completed, run.failed, run.stopped, run.starting…: the menus offer what fits.
    // A run completed with a metric NaN to the end is not offered "Continue training": run.completed-nan.
    item.contextValue = watch
      ? watch.isLive()
        ? 'run.live'
        : `run.${watch.status()}${watch.status() === 'completed' && runNonFinite(watch, node.record) !== undefined ? '-nan' : ''}`
      : 'run.unknown';
    // Plain text, never Markdown: the name is the person's or the run folder's (run-tooltip.ts).
    const reason = watch?.endReason();
    item.tooltip = runTooltip({
      title,
      target: targetTitle(node.record.target),
      runId: watch?.manifest?.run_id ?? node.record.runId,
      ...(started ? { started } : {}),
      runDir: node.record.runDir,
      ...(reason ? { reason } : {}),
    });
    item.command = { command: 'fsdp.openDashboard', title: 'Open run dashboard', arguments: [node.key] };
    return item;
  }

  private scheduleRefresh(): void {
    this.pending ??= setTimeout(() => {
      this.pending = undefined;
      this.changed.fire(undefined);
    }, REFRESH_MS);
  }

  dispose(): void {
    clearTimeout(this.pending);
    this.subscription.dispose();
    this.changed.dispose();
  }
}
