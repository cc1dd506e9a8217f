// Opening a run's things: its dashboard ("FSDP: Open run dashboard"), the config it was launched
// from, and its run folder.
import path from 'node:path';
import * as vscode from 'vscode';
import type { StudioContext } from '../studio-context';
import { runFromArgument, type RunArgument } from './run-picks';

export function registerOpenRun(studio: StudioContext): vscode.Disposable[] {
  const runs = studio.runs;
  return [
    vscode.commands.registerCommand('fsdp.openDashboard', async (arg?: RunArgument) => {
      const record = await runFromArgument(runs, arg, { title: 'Open run dashboard', none: 'No runs in this workspace yet: launch one, or attach to one.' });
      if (record) studio.dashboards.show(record);
    }),
    vscode.commands.registerCommand('fsdp.openRunConfig', async (arg?: RunArgument) => {
      const record = await runFromArgument(runs, arg, { title: 'Open run config', none: 'No runs in this workspace yet.' });
      if (!record) return;
      const configPath = record.configPath ?? runs.watch(record).manifest?.config_path;
      if (!configPath) {
        void vscode.window.showInformationMessage(`${record.runId} does not say which config it was launched from.`);
        return;
      }
      await vscode.window.showTextDocument(vscode.Uri.file(configPath));
    }),
    vscode.commands.registerCommand('fsdp.openRunFolder', async (arg?: RunArgument) => {
      const record = await runFromArgument(runs, arg, { title: 'Open run folder', none: 'No runs in this workspace yet.' });
      if (!record) return;
      if (record.target !== 'local') {
        const pick = await vscode.window.showInformationMessage(`The run folder is on ${record.target}: ${record.runDir}`, 'Copy path');
        if (pick) await vscode.env.clipboard.writeText(record.runDir);
        return;
      }
      // The manifest is the folder's table of contents; the explorer shows the rest beside it.
      const manifest = vscode.Uri.file(path.join(record.runDir, 'run.json'));
      await vscode.window.showTextDocument(manifest, { preview: true });
      await vscode.commands.executeCommand('revealInExplorer', manifest);
    }),
  ];
}
