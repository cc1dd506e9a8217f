// "FSDP: Open memory estimator": the panel for the config in the active editor (or the one the
// inline hint was on, or one picked from the workspace's configs).
import * as vscode from 'vscode';
import { parseSourceDocument, sourceKindOf } from '../../core/config/source-document';
import { configKindOf } from '../../core/memory/inputs/read-config';
import { findRunConfigs } from '../run-configs';
import type { StudioContext } from '../studio-context';
import { MemoryEstimatorPanel } from '../webviews/memory-estimator-panel';

export function registerOpenMemoryEstimator(studio: StudioContext): vscode.Disposable {
  return vscode.commands.registerCommand('fsdp.openMemoryEstimator', async (target?: vscode.Uri | string) => {
    const uri = typeof target === 'string' ? vscode.Uri.parse(target) : (target ?? activeConfig() ?? (await pickConfig()));
    if (!uri) return;
    MemoryEstimatorPanel.show(studio.extension.extensionUri, uri);
  });
}

function activeConfig(): vscode.Uri | undefined {
  const doc = vscode.window.activeTextEditor?.document;
  if (!doc) return undefined;
  const parsed = parseSourceDocument(doc.getText(), sourceKindOf(doc.fileName));
  return configKindOf(parsed.value) ? doc.uri : undefined;
}

async function pickConfig(): Promise<vscode.Uri | undefined> {
  const configs = await findRunConfigs();
  if (configs.length === 0) {
    void vscode.window.showErrorMessage('FSDP: open a run config, DeepSpeed config or accelerate config to estimate its memory.');
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(
    configs.map((uri) => ({ label: vscode.workspace.asRelativePath(uri), uri })),
    { title: 'Estimate the memory of which config?' },
  );
  return picked?.uri;
}
