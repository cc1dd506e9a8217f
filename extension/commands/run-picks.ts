// Which run a command acts on: the one it was invoked on (a run key from a button, the runs view,
// a dashboard) or one the person picks from the workspace's runs.
import * as vscode from 'vscode';
import type { RunRecord } from '../../runs/watch/run-registry';
import { runKey } from '../../runs/watch/run-watch';
import type { Runs } from '../runs/runs';
import type { RunsTreeNode } from '../views/runs-tree';
import { runSummary, runTitle, targetTitle } from '../views/run-labels';

export type RunArgument = string | RunsTreeNode | undefined;

export interface RunPickOptions {
  title: string;
  /** Only runs this accepts are offered. */
  filter?: (record: RunRecord, runs: Runs) => boolean;
  /** Said when no run qualifies. */
  none: string;
}

export async function runFromArgument(
  runs: Runs,
  arg: RunArgument,
  opts: RunPickOptions,
): Promise<RunRecord | undefined> {
  const key = typeof arg === 'string' ? arg : arg?.kind === 'run' ? arg.key : undefined;
  if (key) {
    const record = runs.registry.get(key);
    if (!record)
      void vscode.window.showErrorMessage(`${opts.title}: the run ${key} is not in this workspace's runs list.`);
    return record;
  }
  const [picked] = await pickRuns(runs, opts, false);
  return picked;
}

export async function pickRuns(runs: Runs, opts: RunPickOptions, many: boolean): Promise<RunRecord[]> {
  const records = runs.records().filter((r) => !opts.filter || opts.filter(r, runs));
  if (records.length === 0) {
    void vscode.window.showInformationMessage(opts.none);
    return [];
  }
  records.sort((a, b) => (b.launchedAt ?? 0) - (a.launchedAt ?? 0) || a.runDir.localeCompare(b.runDir));
  const items = records.map((record) => {
    const watch = runs.existingWatch(runKey(record));
    return {
      label: runTitle(record, watch),
      description: `${targetTitle(record.target)} · ${runSummary(watch)}`,
      detail: record.runDir,
      record,
    };
  });
  // The picker stays open when a webview takes the focus (a dashboard loading, a run's view updated
  // at its end): it must not vanish under the person's cursor. Escape still closes it.
  if (many) {
    const picks = await vscode.window.showQuickPick(items, {
      title: opts.title,
      canPickMany: true,
      matchOnDetail: true,
      ignoreFocusOut: true,
    });
    return picks?.map((p) => p.record) ?? [];
  }
  const pick = await vscode.window.showQuickPick(items, {
    title: opts.title,
    matchOnDescription: true,
    matchOnDetail: true,
    ignoreFocusOut: true,
  });
  return pick ? [pick.record] : [];
}
