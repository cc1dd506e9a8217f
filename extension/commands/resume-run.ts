// "FSDP: Resume run": starts a stopped or failed run again in its own run directory with
// `--resume auto` (the trainer continues from its latest complete checkpoint and appends to the
// same metrics.jsonl; the dashboard keeps every step once by the protocol's resume rule).
// "FSDP: Continue training…": the same for a completed run, for N more steps the person chooses
// (training.max_steps raised to the steps done + N); resuming a completed run as it is would only
// rewrite its final checkpoint.
import * as vscode from 'vscode';
import type { RunRecord } from '../../runs/watch/run-registry';
import type { RunWatch } from '../../runs/watch/run-watch';
import type { StudioContext } from '../studio-context';
import { runTitle } from '../views/run-labels';
import { relaunchCommand } from './launch-command';
import { loadForLaunch, requireTrust, startRun } from './launch-run';
import { runFromArgument, type RunArgument } from './run-picks';

export function registerResumeRun(studio: StudioContext): vscode.Disposable[] {
  return [
    vscode.commands.registerCommand('fsdp.resumeRun', (arg?: RunArgument) => resumeRun(studio, arg)),
    vscode.commands.registerCommand('fsdp.continueRun', (arg?: RunArgument) => continueRun(studio, arg)),
  ];
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
  const watch = await endedWatch(studio, record, 'resume');
  if (!watch) return;
  if (watch.status() === 'completed') {
    // A completed run has nothing left to do at its max_steps: offer what the person means.
    await continueRun(studio, watch.key);
    return;
  }
  await restart(studio, record, watch);
}

async function continueRun(studio: StudioContext, arg: RunArgument): Promise<void> {
  if (!requireTrust('Continuing a run executes the trainer')) return;
  const runs = studio.runs;
  const record = await runFromArgument(runs, arg, {
    title: 'Continue training',
    filter: (r) => runs.existingWatch(`${r.target}:${r.runDir}`)?.status() === 'completed',
    none: 'No completed runs to continue.',
  });
  if (!record) return;
  const watch = await endedWatch(studio, record, 'continue');
  if (!watch) return;
  const name = runTitle(record, watch);
  const done = watch.history.lastStep ?? watch.manifest?.step ?? 0;
  if (!watch.history.markers.some((m) => m.kind === 'checkpoint')) {
    void vscode.window
      .showErrorMessage(
        `Cannot continue ${name}: it saved no checkpoint (checkpointing.save_final was off), so it would start over. Launch its config again instead.`,
        'Open config',
      )
      .then((pick) => {
        if (pick) void vscode.commands.executeCommand('fsdp.openRunConfig', watch.key);
      });
    return;
  }
  const suggested = watch.manifest?.max_steps ?? done;
  const answer = await vscode.window.showInputBox({
    title: `Continue training ${name}`,
    prompt: `It completed ${done} steps. How many more? It continues from its last checkpoint, with the learning-rate schedule stretched to the new total.`,
    value: String(suggested || 100),
    validateInput: (v) => (/^[1-9]\d{0,8}$/.test(v.trim()) ? undefined : 'A whole number of steps, at least 1'),
  });
  if (!answer) return;
  const maxSteps = done + Number(answer.trim());
  await restart(studio, record, watch, maxSteps);
}

/** The run's watch once its processes are gone; undefined (after saying why) when it cannot restart. */
async function endedWatch(studio: StudioContext, record: RunRecord, verb: string): Promise<RunWatch | undefined> {
  const watch = studio.runs.watch(record);
  await watch.refreshJob();
  if (watch.isLive()) {
    void vscode.window.showInformationMessage(`${record.runId} is still running.`);
    return undefined;
  }
  // A run that was just stopped may still be saving its checkpoint: restarting before its
  // processes are gone would race it for the run folder.
  const pgid = watch.manifest?.pgid;
  const machine = studio.runs.machine(record.target);
  if (pgid !== undefined && (await machine.isAlive(pgid))) {
    const gone = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Waiting for ${record.runId} to finish stopping…` },
      async () => {
        for (
          const deadline = Date.now() + 60_000;
          Date.now() < deadline;
          await new Promise((r) => setTimeout(r, 500))
        ) {
          if (!(await machine.isAlive(pgid))) return true;
        }
        return false;
      },
    );
    if (!gone) {
      void vscode.window.showErrorMessage(
        `Cannot ${verb} ${record.runId}: its processes (group ${pgid}) are still running. Stop it first.`,
      );
      return undefined;
    }
    await watch.refreshManifest();
  }
  return watch;
}

/** Starts the run again in its folder from its latest checkpoint; `maxSteps` raises training.max_steps. */
async function restart(studio: StudioContext, record: RunRecord, watch: RunWatch, maxSteps?: number): Promise<void> {
  // It runs again: an earlier Stop is history.
  watch.stopRequested = false;
  studio.runs.remember({ ...record, stopRequestedAt: undefined });
  // A person's own command starts again from its launch spec, in the same run folder.
  if (watch.manifest?.kind === 'command') return relaunchCommand(studio, record, watch.manifest);
  const configPath = record.configPath ?? watch.manifest?.config_path;
  if (!configPath) {
    void vscode.window.showErrorMessage(
      `Cannot restart ${record.runId}: its run.json does not say which config it was launched from.`,
    );
    return;
  }
  const config = await loadForLaunch(studio, vscode.Uri.file(configPath));
  if (!config) return;
  // A run resumes where it lives, even if the config's launch.target changed since.
  config.launch.target = record.target;
  const overrides: string[] = [];
  if (maxSteps !== undefined) {
    config.training.max_steps = maxSteps;
    overrides.push(`training.max_steps=${maxSteps}`);
  }
  await startRun(
    studio,
    { configPath, config, resumeRunDir: record.runDir, ...(overrides.length ? { overrides } : {}) },
    watch.manifest,
  );
}
