// "FSDP: Resume run": starts a stopped or failed run again in its own run directory with
// `--resume auto` (the trainer continues from its latest complete checkpoint and appends to the
// same metrics.jsonl; the dashboard keeps every step once by the protocol's resume rule).
import * as vscode from 'vscode';
import type { StudioContext } from '../studio-context';
import { relaunchCommand } from './launch-command';
import { loadForLaunch, requireTrust, startRun } from './launch-run';
import { runFromArgument, type RunArgument } from './run-picks';

export function registerResumeRun(studio: StudioContext): vscode.Disposable {
  return vscode.commands.registerCommand('fsdp.resumeRun', (arg?: RunArgument) => resumeRun(studio, arg));
}

async function resumeRun(studio: StudioContext, arg: RunArgument): Promise<void> {
  if (!requireTrust('Resuming a run executes the trainer')) return;
  const runs = studio.runs;
  const record = await runFromArgument(runs, arg, {
    title: 'Resume run',
    filter: (r) => {
      const s = runs.existingWatch(`${r.target}:${r.runDir}`)?.status();
      return s === 'stopped' || s === 'failed' || s === 'cancelled' || s === 'timed-out' || s === 'preempted';
    },
    none: 'No stopped, failed or cancelled runs to resume.',
  });
  if (!record) return;
  const watch = runs.watch(record);
  await watch.refreshJob();
  if (watch.isLive()) {
    void vscode.window.showInformationMessage(`${record.runId} is still running.`);
    return;
  }
  // A run that was just stopped may still be saving its checkpoint: resuming before its processes
  // are gone would race it for the run folder.
  const pgid = watch.manifest?.pgid;
  const machine = runs.machine(record.target);
  if (pgid !== undefined && (await machine.isAlive(pgid))) {
    const gone = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Waiting for ${record.runId} to finish stopping…` }, async () => {
      for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 500))) {
        if (!(await machine.isAlive(pgid))) return true;
      }
      return false;
    });
    if (!gone) {
      void vscode.window.showErrorMessage(`Cannot resume ${record.runId}: its processes (group ${pgid}) are still running. Stop it first.`);
      return;
    }
    await watch.refreshManifest();
  }
  // A person's own command starts again from its launch spec, in the same run folder.
  if (watch.manifest?.kind === 'command') return relaunchCommand(studio, record, watch.manifest);
  const configPath = record.configPath ?? watch.manifest?.config_path;
  if (!configPath) {
    void vscode.window.showErrorMessage(`Cannot resume ${record.runId}: its run.json does not say which config it was launched from.`);
    return;
  }
  const uri = vscode.Uri.file(configPath);
  const config = await loadForLaunch(studio, uri);
  if (!config) return;
  // A run resumes where it lives, even if the config's launch.target changed since.
  config.launch.target = record.target;
  await startRun(studio, { configPath, config, resumeRunDir: record.runDir }, watch.manifest);
}
