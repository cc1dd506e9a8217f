// Opening a run's things: its dashboard ("FSDP: Open run dashboard"), the config it was launched
// from, its run folder, and its log (stderr.log, where the trainer says why it failed).
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { mayReach } from '../runs/runs';
import type { StudioContext } from '../studio-context';
import { runFromArgument, type RunArgument } from './run-picks';

export function registerOpenRun(studio: StudioContext): vscode.Disposable[] {
  const runs = studio.runs;
  return [
    vscode.commands.registerCommand('fsdp.openDashboard', async (arg?: RunArgument) => {
      const record = await runFromArgument(runs, arg, {
        title: 'Open run dashboard',
        none: 'No runs in this workspace yet: launch one, or attach to one.',
      });
      if (record) studio.dashboards.show(record);
    }),
    vscode.commands.registerCommand('fsdp.openRunConfig', async (arg?: RunArgument) => {
      const record = await runFromArgument(runs, arg, {
        title: 'Open run config',
        none: 'No runs in this workspace yet.',
      });
      if (!record) return;
      // Without a recorded config path the run's run.json says it, which for a remote run is read over SSH.
      if (!record.configPath && !mayReach([record.target], `Reading which config ${record.runId} was launched from`))
        return;
      const configPath = record.configPath ?? runs.watch(record).manifest?.config_path;
      if (!configPath) {
        void vscode.window.showInformationMessage(`${record.runId} does not say which config it was launched from.`);
        return;
      }
      await vscode.window.showTextDocument(vscode.Uri.file(configPath));
    }),
    vscode.commands.registerCommand('fsdp.openRunLog', async (arg?: RunArgument) => {
      const record = await runFromArgument(runs, arg, {
        title: 'Open run log',
        none: 'No runs in this workspace yet.',
      });
      if (record) await openRunLog(studio, record.target, record.runDir);
    }),
    vscode.commands.registerCommand('fsdp.openRunFolder', async (arg?: RunArgument) => {
      const record = await runFromArgument(runs, arg, {
        title: 'Open run folder',
        none: 'No runs in this workspace yet.',
      });
      if (!record) return;
      if (record.target !== 'local') {
        const pick = await vscode.window.showInformationMessage(
          `The run folder is on ${record.target}: ${record.runDir}`,
          'Copy path',
        );
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

/** The trainer's output of a run launched from the editor: stderr.log, or stdout.log when stderr is empty. */
const LOG_FILES = ['stderr.log', 'stdout.log'];
/** How much of a remote log is fetched: its end, where a failure is. */
const REMOTE_LOG_BYTES = 256 * 1024;

async function openRunLog(studio: StudioContext, target: string, runDir: string): Promise<void> {
  if (target === 'local') {
    const file =
      LOG_FILES.map((name) => path.join(runDir, name)).find((f) => existsSync(f) && statSync(f).size > 0) ??
      path.join(runDir, LOG_FILES[0]);
    if (!existsSync(file)) {
      void vscode.window.showInformationMessage(
        `${path.basename(runDir)} has no log in its folder: runs started from a terminal write to that terminal.`,
      );
      return;
    }
    const editor = await vscode.window.showTextDocument(vscode.Uri.file(file), { preview: true });
    const last = editor.document.lineCount - 1;
    editor.revealRange(new vscode.Range(last, 0, last, 0), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
    return;
  }
  if (!mayReach([target], `Opening the log of ${path.basename(runDir)}`)) return;
  const machine = studio.runs.machine(target);
  for (const name of LOG_FILES) {
    const text = (
      await machine.readFile(`${runDir}/${name}`, REMOTE_LOG_BYTES, true).catch(() => Buffer.alloc(0))
    ).toString('utf8');
    if (!text) continue;
    const doc = await vscode.workspace.openTextDocument({
      content: `# ${target}:${runDir}/${name} (its last ${REMOTE_LOG_BYTES / 1024} KiB at most)\n${text}`,
      language: 'log',
    });
    await vscode.window.showTextDocument(doc, { preview: true });
    return;
  }
  void vscode.window.showInformationMessage(`${path.basename(runDir)} on ${target} has no log output.`);
}
