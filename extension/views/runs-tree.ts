// The runs view in the activity bar: runs grouped by host, a status icon each, live step and loss
// in the description. Refreshes at most a few times a second however fast events arrive.
import * as vscode from 'vscode';
import type { RunRecord } from '../runs/run-registry';
import { runKey } from '../runs/run-watch';
import type { Runs } from '../runs/runs';
import { runSummary, runTitle, statusIcon, targetTitle } from './run-labels';

const REFRESH_MS = 300;

export type RunsTreeNode = { kind: 'host'; target: string } | { kind: 'run'; key: string; record: RunRecord };

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
      const targets = [...new Set(records.map((r) => r.target))].sort((a, b) => (a === 'local' ? -1 : b === 'local' ? 1 : a.localeCompare(b)));
      return targets.map((target) => ({ kind: 'host', target }));
    }
    if (node.kind === 'run') return [];
    return records
      .filter((r) => r.target === node.target)
      .sort((a, b) => (b.launchedAt ?? 0) - (a.launchedAt ?? 0) || b.runId.localeCompare(a.runId))
      .map((record) => ({ kind: 'run', key: runKey(record), record }));
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
    const item = new vscode.TreeItem(runTitle(node.record, watch), vscode.TreeItemCollapsibleState.None);
    item.id = node.key;
    item.description = runSummary(watch);
    item.iconPath = statusIcon(watch?.status(), watch);
    item.contextValue = watch?.isLive() ? 'run.live' : 'run.ended';
    const tip = new vscode.MarkdownString();
    tip.appendMarkdown(`**${runTitle(node.record, watch)}** — ${targetTitle(node.record.target)}\n\n`);
    tip.appendText(`${node.record.runDir}\n`);
    const reason = watch?.endReason();
    if (reason) tip.appendText(`\n${reason}`);
    item.tooltip = tip;
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
