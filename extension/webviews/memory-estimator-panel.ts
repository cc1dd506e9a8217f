// Hosts the "Memory estimator" panel for one config document: sends the config's estimate input
// whenever the document changes, and applies the changes the panel asks for as a WorkspaceEdit at
// the exact range. The estimating itself happens in the webview (core/memory is pure and fast).
// A config whose input cannot be read from its text (a torchtitan 0.3 Python function: it has to run)
// comes as a computed input instead: shown as given, its changes not written back.
import os from 'node:os';
import * as vscode from 'vscode';
import { changeEdit } from '../../core/memory/apply-change';
import { isConfigInputError } from '../../core/memory/inputs/config-input';
import { hfModelSource } from '../../core/memory/inputs/hf-model';
import { readConfigForEstimate } from '../../core/memory/inputs/read-config';
import { describeChange, type MemoryChange } from '../../core/memory/memory-change';
import type {
  EstimatorConfigMessage,
  MemoryEstimatorFromWebview,
  MemoryEstimatorToWebview,
} from '../../core/panels/memory-estimator-messages';
import { PanelHost } from './panel-host';

/** A config's input computed outside the panel, and why the panel cannot write a change back into it. */
export interface ComputedConfig extends Pick<EstimatorConfigMessage, 'fileName' | 'kind' | 'input' | 'notes'> {
  readOnly: string;
}

export class MemoryEstimatorPanel implements vscode.Disposable {
  private static current: MemoryEstimatorPanel | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private pending: NodeJS.Timeout | undefined;

  /** Shows the panel for `uri` (with `computed`, that input instead of the document's text), reusing the open one. */
  static show(extensionUri: vscode.Uri, uri: vscode.Uri, computed?: ComputedConfig): MemoryEstimatorPanel {
    if (MemoryEstimatorPanel.current) {
      MemoryEstimatorPanel.current.setDocument(uri, computed);
      MemoryEstimatorPanel.current.host.reveal();
      return MemoryEstimatorPanel.current;
    }
    const host = PanelHost.create<MemoryEstimatorToWebview, MemoryEstimatorFromWebview>(
      extensionUri,
      { viewType: 'fsdp.memoryEstimator', title: 'Memory estimator', bundle: 'memory-estimator' },
      vscode.ViewColumn.Beside,
    );
    MemoryEstimatorPanel.current = new MemoryEstimatorPanel(host, uri, computed);
    return MemoryEstimatorPanel.current;
  }

  private constructor(
    private readonly host: PanelHost<MemoryEstimatorToWebview, MemoryEstimatorFromWebview>,
    private uri: vscode.Uri,
    private computed: ComputedConfig | undefined,
  ) {
    this.disposables.push(
      host,
      host.onReady(() => void this.sendConfig()),
      host.onMessage((m) => {
        if (m.type === 'apply') void this.apply(m.change);
      }),
      host.onDidDispose(() => this.dispose()),
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (!this.computed && e.document.uri.toString() === this.uri.toString()) this.scheduleSend();
      }),
    );
    this.updateTitle();
  }

  private setDocument(uri: vscode.Uri, computed: ComputedConfig | undefined): void {
    this.uri = uri;
    this.computed = computed;
    this.updateTitle();
    void this.sendConfig();
  }

  private updateTitle(): void {
    this.host.panel.title = `Memory: ${this.computed?.fileName ?? this.uri.path.split('/').pop()}`;
  }

  /** Typing produces a burst of changes; estimate once it pauses. */
  private scheduleSend(): void {
    clearTimeout(this.pending);
    this.pending = setTimeout(() => void this.sendConfig(), 150);
  }

  private async sendConfig(): Promise<void> {
    if (this.computed) {
      const { readOnly: _, ...config } = this.computed;
      this.host.clearQueue();
      this.host.post({ type: 'config', ...config, hostMemoryBytes: os.totalmem() });
      return;
    }
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
    if (this.computed) {
      this.host.post({
        type: 'applied',
        ok: false,
        message: `Cannot apply ${describeChange(change)}: ${this.computed.readOnly}`,
      });
      return;
    }
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
