// "FSDP: Open memory estimator": the panel for the config in the active editor (or the one the
// inline hint was on, or one picked from the workspace's run, DeepSpeed and accelerate configs).
import * as vscode from 'vscode';
import { recogniseConfig } from '../../core/config/document-kind';
import type { StudioContext } from '../studio-context';
import { MemoryEstimatorPanel } from '../webviews/memory-estimator-panel';

const EXCLUDE = '{**/node_modules/**,**/runs/**,**/.git/**,**/dist/**}';

export function registerOpenMemoryEstimator(studio: StudioContext): vscode.Disposable {
  return vscode.commands.registerCommand('fsdp.openMemoryEstimator', async (target?: vscode.Uri | string) => {
    const uri =
      typeof target === 'string' ? vscode.Uri.parse(target) : (target ?? activeConfig() ?? (await pickConfig()));
    if (!uri) return;
    MemoryEstimatorPanel.show(studio.extension.extensionUri, uri);
  });
}

function activeConfig(): vscode.Uri | undefined {
  const doc = vscode.window.activeTextEditor?.document;
  return doc && kindOf(doc.getText(), doc.fileName) ? doc.uri : undefined;
}

function kindOf(text: string, fileName: string): string | undefined {
  return recogniseConfig(fileName, text);
}

async function pickConfig(): Promise<vscode.Uri | undefined> {
  const files = await vscode.workspace.findFiles('**/*.{yaml,yml,json,jsonc}', EXCLUDE, 500);
  const items: Array<vscode.QuickPickItem & { uri: vscode.Uri }> = [];
  for (const uri of files) {
    const text = Buffer.from(await vscode.workspace.fs.readFile(uri)).toString('utf8');
    const kind = kindOf(text, uri.path);
    if (kind) items.push({ label: vscode.workspace.asRelativePath(uri), description: kind, uri });
  }
  if (items.length === 0) {
    void vscode.window.showErrorMessage(
      'FSDP: no run config, DeepSpeed config or accelerate config in this workspace to estimate.',
    );
    return undefined;
  }
  items.sort((a, b) => a.label.localeCompare(b.label));
  return (await vscode.window.showQuickPick(items, { title: 'Estimate the memory of which config?' }))?.uri;
}
