// "FSDP: Rename run": the name the runs view, the status bar and the dashboards show for a run,
// kept in the workspace's runs list (the run folder and its id stay as they are, so nothing that
// points at the run breaks). An empty name goes back to the config's name.
import * as vscode from 'vscode';
import type { StudioContext } from '../studio-context';
import { runTitle } from '../views/run-labels';
import { runFromArgument, type RunArgument } from './run-picks';

export function registerRenameRun(studio: StudioContext): vscode.Disposable {
  return vscode.commands.registerCommand('fsdp.renameRun', async (arg?: RunArgument) => {
    const runs = studio.runs;
    const record = await runFromArgument(runs, arg, { title: 'Rename run', none: 'No runs in this workspace yet.' });
    if (!record) return;
    const watch = runs.existingWatch(`${record.target}:${record.runDir}`);
    const answer = await vscode.window.showInputBox({
      title: `Rename ${runTitle(record, watch)}`,
      prompt: `The name shown for run ${record.runId} (its folder is not renamed). Empty: the config's name.`,
      value: runTitle(record, watch),
      validateInput: (v) => (v.length > 200 ? 'At most 200 characters' : /[\n\r]/.test(v) ? 'One line' : undefined),
    });
    if (answer === undefined) return;
    const label = answer.trim();
    runs.remember({ ...record, label: label || undefined });
  });
}
