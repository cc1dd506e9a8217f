// Applying a fix from the NaN or spike view to the native run config the run was launched from:
// the one value changed in the editor (the exact characters of that key, or one inserted line;
// undoable, the person's other lines untouched), left unsaved until the person says Save. Runs
// of a person's own script have no such fix: their advice names the knob in their code.
import * as vscode from 'vscode';
import { setYamlKey } from '../../core/config/yaml-key-edit';
import type { FixId } from '../../core/panels/diagnostics-messages';
import { fixEdit } from '../../core/runs/anomaly-report';
import type { RunRecord } from '../../runs/watch/run-registry';
import type { RunWatch } from '../../runs/watch/run-watch';
import { runAdvice } from './run-advice-context';

export async function applyConfigFix(id: FixId, record: RunRecord, watch: RunWatch): Promise<void> {
  const ctx = runAdvice(record, watch);
  if (ctx.framework !== 'native') {
    void vscode.window.showInformationMessage(
      'This run is your own script: change it as the advice says (nothing is edited for you).',
    );
    return;
  }
  const configPath = record.configPath ?? watch.manifest?.config_path;
  const edit = fixEdit(id, ctx);
  if (!configPath || !edit || /\.fsdp-launch\.ya?ml$/i.test(configPath)) {
    void vscode.window.showInformationMessage(
      configPath ? 'This fix has no automatic edit.' : 'The run does not say which config it was launched from.',
    );
    return;
  }
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(configPath));
  const change = setYamlKey(doc.getText(), edit.path, edit.value);
  const rel = vscode.workspace.asRelativePath(doc.uri);
  if ('error' in change) {
    void vscode.window.showWarningMessage(
      `${rel}: cannot set ${edit.path.join('.')} to ${edit.value}: ${change.error}.`,
    );
    return;
  }
  const editor = await vscode.window.showTextDocument(doc, { preview: false });
  const range = new vscode.Range(doc.positionAt(change.offset), doc.positionAt(change.offset + change.length));
  // An editor edit, not a WorkspaceEdit: a workspace edit of a file no editor shows may be saved by
  // the editor on its own (files.refactoring.autoSave); this one stays unsaved until asked.
  if (!(await editor.edit((b) => b.replace(range, change.text)))) {
    void vscode.window.showWarningMessage(`${rel} changed while the fix was being applied; try again.`);
    return;
  }
  const at = doc.positionAt(change.offset + (change.length ? 0 : change.text.length));
  editor.selection = new vscode.Selection(at, at);
  editor.revealRange(new vscode.Range(at, at));
  const choice = await vscode.window.showInformationMessage(
    `${rel}: set ${edit.path.join('.')} to ${edit.value} (not saved). Save it, then resume or relaunch the run.`,
    'Save',
  );
  if (choice === 'Save') await doc.save();
}
