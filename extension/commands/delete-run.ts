// "FSDP: Delete run": removes a run from the runs view and deletes its folder (checkpoints, logs,
// metrics) on its machine, after the person confirms. A live run is stopped first, never deleted
// under its own feet; a folder without run.json is never deleted.
import * as vscode from 'vscode';
import type { StudioContext } from '../studio-context';
import { runTitle, targetTitle } from '../views/run-labels';
import { requireTrust } from './launch-run';
import { runFromArgument, type RunArgument } from './run-picks';

export function registerDeleteRun(studio: StudioContext): vscode.Disposable {
  return vscode.commands.registerCommand('fsdp.deleteRun', (arg?: RunArgument) => deleteRun(studio, arg));
}

async function deleteRun(studio: StudioContext, arg: RunArgument): Promise<void> {
  if (!requireTrust('Deleting a run removes files')) return;
  const runs = studio.runs;
  const record = await runFromArgument(runs, arg, {
    title: 'Delete run',
    filter: (r) => !runs.existingWatch(`${r.target}:${r.runDir}`)?.isLive(),
    none: 'No ended runs to delete.',
  });
  if (!record) return;
  const watch = runs.watch(record);
  await watch.refreshManifest();
  if (watch.isLive()) {
    void vscode.window
      .showWarningMessage(`${runTitle(record, watch)} is still running: stop it before deleting it.`, 'Stop run')
      .then((pick) => {
        if (pick) void vscode.commands.executeCommand('fsdp.stopRun', watch.key);
      });
    return;
  }
  const where = record.target === 'local' ? record.runDir : `${record.runDir} on ${targetTitle(record.target)}`;
  const choice = await vscode.window.showWarningMessage(
    `Delete the run ${runTitle(record, watch)} (${watch.manifest?.run_id ?? record.runId})?`,
    {
      modal: true,
      detail: `Its folder ${where} is deleted with its checkpoints, logs and metrics. This cannot be undone.`,
    },
    'Delete run and folder',
  );
  if (choice !== 'Delete run and folder') return;
  try {
    await runs.machine(record.target).removeRunDir(record.runDir);
  } catch (e) {
    void vscode.window.showErrorMessage(`Cannot delete ${record.runId}: ${(e as Error).message}`);
    return;
  }
  studio.output.info(`deleted run ${record.runDir} (${record.target})`);
  runs.forget(watch.key);
}
