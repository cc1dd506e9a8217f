// Hosts the "Memory estimator" panel for one config document: sends the config's estimate input
// whenever the document changes, and applies the changes the panel asks for as a WorkspaceEdit at
// the exact range. The estimating itself happens in the webview (core/memory is pure and fast).
import os from 'node:os';
import * as vscode from 'vscode';
import { changeEdit } from '../../core/memory/apply-change';
import { isConfigInputError } from '../../core/memory/inputs/config-input';
import { hfModelSource } from '../../core/memory/inputs/hf-model';
import { readConfigForEstimate } from '../../core/memory/inputs/read-config';
import { describeChange, type MemoryChange } from '../../core/memory/memory-change';
import type { MemoryEstimatorFromWebview, MemoryEstimatorToWebview } from '../../core/panels/memory-estimator-messages';
import { PanelHost } from './panel-host';

export class MemoryEstimatorPanel implements vscode.Disposable {
  private static current: MemoryEstimatorPanel | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private pending: NodeJS.Timeout | undefined;

  /** Shows the panel for `uri`, reusing the open one. */
  static show(extensionUri: vscode.Uri, uri: vscode.Uri): MemoryEstimatorPanel {
    if (MemoryEstimatorPanel.current) {
      MemoryEstimatorPanel.current.setDocument(uri);
      MemoryEstimatorPanel.current.host.reveal();
      return MemoryEstimatorPanel.current;
    }
    const host = PanelHost.create<MemoryEstimatorToWebview, MemoryEstimatorFromWebview>(
      extensionUri,
      { viewType: 'fsdp.memoryEstimator', title: 'Memory estimator', bundle: 'memory-estimator' },
      vscode.ViewColumn.Beside,
    );
    MemoryEstimatorPanel.current = new MemoryEstimatorPanel(host, uri);
    return MemoryEstimatorPanel.current;
  }

  private constructor(
    private readonly host: PanelHost<MemoryEstimatorToWebview, MemoryEstimatorFromWebview>,
    private uri: vscode.Uri,
  ) {
    this.disposables.push(
      host,
      host.onReady(() => void this.sendConfig()),
      host.onMessage((m) => {
        if (m.type === 'apply') void this.apply(m.change);
      }),
      host.onDidDispose(() => this.dispose()),
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (e.document.uri.toString() === this.uri.toString()) this.scheduleSend();
      }),
    );
    this.updateTitle();
  }

  private setDocument(uri: vscode.Uri): void {
    this.uri = uri;
    this.updateTitle();
    void this.sendConfig();
  }

  private updateTitle(): void {
    this.host.panel.title = `Memory: ${this.uri.path.split('/').pop()}`;
  }

  /** Typing produces a burst of changes; estimate once it pauses. */
  private scheduleSend(): void {
    clearTimeout(this.pending);
    this.pending = setTimeout(() => void this.sendConfig(), 150);
  }

  private async sendConfig(): Promise<void> {
    const doc = await vscode.workspace.openTextDocument(this.uri);
    const fileName = vscode.workspace.asRelativePath(this.uri);
    const read = readConfigForEstimate(
      doc.getText(),
      fileName,
      {},
      undefined,
      this.uri.scheme === 'file' ? hfModelSource(this.uri.fsPath) : undefined,
    );
    // The panel shows one config at a time; a newer state replaces anything queued while hidden.
    this.host.clearQueue();
    if (isConfigInputError(read)) {
      this.host.post({ type: 'configError', fileName, error: read.error });
      return;
    }
    this.host.post({
      type: 'config',
      fileName,
      kind: read.kind,
      input: read.input,
      notes: read.notes,
      ...(read.model ? { model: read.model } : {}),
      hostMemoryBytes: os.totalmem(),
    });
  }

  private async apply(change: MemoryChange): Promise<void> {
    const doc = await vscode.workspace.openTextDocument(this.uri);
    const result = changeEdit(doc.getText(), vscode.workspace.asRelativePath(this.uri), change);
    if ('error' in result) {
      this.host.post({
        type: 'applied',
        ok: false,
        message: `Cannot apply ${describeChange(change)}: ${result.error}`,
      });
      return;
    }
    if (!result.edit) {
      this.host.post({ type: 'applied', ok: true, message: `The config already has ${describeChange(change)}.` });
      return;
    }
    const { start, end } = result.edit.range;
    const edit = new vscode.WorkspaceEdit();
    edit.replace(this.uri, new vscode.Range(start.line, start.character, end.line, end.character), result.edit.newText);
    const ok = await vscode.workspace.applyEdit(edit);
    this.host.post({
      type: 'applied',
      ok,
      message: ok
        ? `Applied ${describeChange(change)} to ${vscode.workspace.asRelativePath(this.uri)} (line ${start.line + 1}).`
        : `VS Code refused the edit for ${describeChange(change)}.`,
    });
  }

  dispose(): void {
    clearTimeout(this.pending);
    if (MemoryEstimatorPanel.current === this) MemoryEstimatorPanel.current = undefined;
    for (const d of this.disposables.splice(0)) d.dispose();
  }
}
