// "FSDP: Launch FSDP run": pick a run config, validate it, start the trainer.
import * as vscode from 'vscode';
import { checkRunConfigText } from '../../core/config/run-config';
import { formatProblem } from '../../core/config/schema-problems';
import { findRunConfigs } from '../run-configs';
import type { StudioContext } from '../studio-context';

export function registerLaunchRun(studio: StudioContext): vscode.Disposable {
  return vscode.commands.registerCommand('fsdp.launchRun', (uri?: vscode.Uri) => launchRun(studio, uri));
}

async function launchRun(studio: StudioContext, preselected?: vscode.Uri): Promise<void> {
  if (!vscode.workspace.isTrusted) {
    void vscode.window.showWarningMessage('Launching a run executes the trainer: trust this workspace first (Workspaces: Manage Workspace Trust).');
    return;
  }
  const uri = preselected ?? (await pickRunConfig());
  if (!uri) return;
  const rel = vscode.workspace.asRelativePath(uri);
  const text = Buffer.from(await vscode.workspace.fs.readFile(uri)).toString('utf8');
  const { problems } = checkRunConfigText(text, uri.fsPath);
  const errors = problems.filter((p) => p.severity === 'error');
  if (errors.length) {
    for (const p of errors) studio.output.error(formatProblem(rel, p));
    studio.output.show(true);
    void vscode.window.showErrorMessage(`${rel} has ${errors.length} error${errors.length > 1 ? 's' : ''}: ${formatProblem(rel, errors[0])}`);
    return;
  }
  const capabilities = await studio.runtime.capabilities();
  if (!capabilities.includes('train')) {
    const why = studio.runtime.isBuilt()
      ? 'this build of the native runtime can probe devices but has no trainer yet'
      : 'the native runtime is not built (run npm install in the extension folder)';
    void vscode.window.showWarningMessage(`Cannot launch ${rel}: ${why}. The config is valid.`);
    return;
  }
  void vscode.window.showErrorMessage(`Cannot launch ${rel}: launching is not wired to the trainer in this build.`);
}

async function pickRunConfig(): Promise<vscode.Uri | undefined> {
  const configs = await findRunConfigs();
  if (configs.length === 0) {
    void vscode.window.showInformationMessage('No run configs in this workspace: a run config is a YAML file with model, data and training sections (e.g. my-run.fsdp.yaml).');
    return undefined;
  }
  const pick = await vscode.window.showQuickPick(
    configs.map((uri) => ({ label: vscode.workspace.asRelativePath(uri), uri })),
    { title: 'Launch FSDP run', placeHolder: 'Run config to launch' },
  );
  return pick?.uri;
}
