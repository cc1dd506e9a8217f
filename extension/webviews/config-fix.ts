// Applying a fix from the NaN or spike view to the config the run was launched from: an ordinary
// edit in the editor (undoable, unsaved until the person saves), then a word on what changed.
import * as vscode from 'vscode';
import { parseDocument } from 'yaml';
import type { FixId } from '../../core/panels/diagnostics-messages';
import { fixEdit } from '../../core/runs/anomaly-report';
import type { RunRecord } from '../../runs/watch/run-registry';
import type { RunWatch } from '../../runs/watch/run-watch';

export async function applyConfigFix(id: FixId, record: RunRecord, watch: RunWatch): Promise<void> {
  const configPath = record.configPath ?? watch.manifest?.config_path;
  const edit = fixEdit(id, (watch.history.start?.config ?? {}) as Parameters<typeof fixEdit>[1]);
  if (!configPath || !edit) {
    void vscode.window.showInformationMessage(configPath ? 'This fix has no automatic edit.' : 'The run does not say which config it was launched from.');
    return;
  }
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(configPath));
  const yaml = parseDocument(doc.getText());
  yaml.setIn(edit.path, edit.value);
  const whole = new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length));
  const we = new vscode.WorkspaceEdit();
  we.replace(doc.uri, whole, yaml.toString());
  await vscode.workspace.applyEdit(we);
  await vscode.window.showTextDocument(doc);
  void vscode.window.showInformationMessage(`${vscode.workspace.asRelativePath(doc.uri)}: set ${edit.path.join('.')} to ${edit.value}. Save it and resume or relaunch the run.`);
}
