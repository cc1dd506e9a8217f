// The editor's side of SLURM runs: submitting (after the memory check for the job's shape),
// stopping and resuming by job id, with progress, messages and the batch script shown. The work
// itself is in runs/slurm/, which the tests drive against a real SLURM.
import path from 'node:path';
import * as vscode from 'vscode';
import type { ResolvedLaunchSpec } from '../../core/config/launch-spec';
import type { ResolvedRunConfig } from '../../core/config/run-config';
import { jobMemoryCheck } from '../../runs/slurm/slurm-memory';
import type { RunManifest } from '../../core/protocol/run-manifest';
import type { LaunchRequest } from '../../runs/launch/launcher';
import { LOCAL } from '../../runs/machines/run-machine';
import type { RunRecord } from '../../runs/watch/run-registry';
import type { RunWatch } from '../../runs/watch/run-watch';
import { stopSlurmJob } from '../../runs/slurm/slurm-control';
import { COMPANION_DIR, RemoteCompanionInstaller } from '../../runs/runtime/remote-companion';
import { launchCommandOnSlurm } from '../../runs/slurm/slurm-command-launch';
import { launchSlurm, placeHere, placeOverSsh, type LaunchedSlurmRun } from '../../runs/slurm/slurm-launch';
import type { SshMachine } from '../../runs/machines/ssh-machine';
import type { StudioContext } from '../studio-context';
import { remoteBase } from '../runs/runs';

/** Whether a config is launched as a SLURM job. */
export function onSlurm(config: ResolvedRunConfig): boolean {
  return config.launch.slurm !== undefined;
}

/**
 * The memory check for the job's shape: the estimator's per-rank peak at its world size against the
 * partition's GPU (or a node's memory per task on the CPU). Asks when it does not fit; says in the
 * output what it compared, or why it could not.
 */
export async function slurmMemoryFits(studio: StudioContext, config: ResolvedRunConfig, configPath: string): Promise<boolean> {
  const target = config.launch.target ?? LOCAL;
  let check;
  try {
    const partition = await studio.runs.cluster(target).partition(config.launch.slurm?.partition);
    const text = Buffer.from(await vscode.workspace.fs.readFile(vscode.Uri.file(configPath))).toString('utf8');
    check = jobMemoryCheck(text, configPath, config, partition);
  } catch (e) {
    studio.output.warn(`memory check before submitting: ${(e as Error).message}`);
    return true;
  }
  studio.output.info(`memory check before submitting: ${check.message}`);
  if (check.fits !== false) return true;
  const choice = await vscode.window.showWarningMessage(`The job's memory estimate ${check.message}. Submit anyway?`, { modal: true }, 'Submit anyway');
  return choice === 'Submit anyway';
}

/** Submits (or resubmits, for a resume) a run to SLURM, registers it and opens its dashboard. */
export async function startSlurmRun(studio: StudioContext, req: LaunchRequest, previous?: RunManifest): Promise<LaunchedSlurmRun | undefined> {
  const target = req.config.launch.target ?? LOCAL;
  return submitWithProgress(studio, { name: req.config.name ?? path.basename(req.configPath), configPath: req.configPath, target, resumed: !!req.resumeRunDir }, async (report) => {
    const cluster = studio.runs.cluster(target);
    if (target === LOCAL) return launchSlurm({ cluster, place: placeHere(studio.runtime.cliPath, path.join(path.dirname(req.configPath), 'runs')) }, req, report, previous);
    const base = await (studio.runs.machine(target) as SshMachine).absolute(remoteBase());
    return launchSlurm({ cluster, place: placeOverSsh(target, () => studio.runs.sshSettings(), base, studio.extension.extensionPath) }, req, report, previous);
  });
}

/** The submission as the person sees it: progress, the outcome, the run registered and its dashboard open. */
async function submitWithProgress(studio: StudioContext, run: { name: string; configPath: string; target: string; resumed: boolean }, submit: (report: (message: string) => void) => Promise<LaunchedSlurmRun>): Promise<LaunchedSlurmRun | undefined> {
  const rel = vscode.workspace.asRelativePath(run.configPath);
  const verb = run.resumed ? 'Resubmitting' : 'Submitting';
  let launched: LaunchedSlurmRun;
  try {
    launched = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `${verb} ${rel} to SLURM${run.target === LOCAL ? '' : ` on ${run.target}`}` }, (progress) =>
      submit((message) => {
        progress.report({ message });
        studio.output.info(`${run.target}: ${message}`);
      }),
    );
  } catch (e) {
    studio.output.error(`${verb} ${rel} failed: ${(e as Error).message}`);
    void vscode.window.showErrorMessage(`${verb} ${rel} failed: ${(e as Error).message}`);
    return undefined;
  }
  studio.output.info(`submitted ${launched.runId} as job ${launched.jobId} on ${run.target}: ${launched.argv.join(' ')}`);
  const record: RunRecord = { target: run.target, runDir: launched.runDir, runId: launched.runId, name: run.name, configPath: run.configPath, launchedAt: Date.now() };
  studio.runs.remember(record);
  const watch = studio.runs.watch(record);
  if (run.resumed) {
    await watch.refreshJob();
    watch.follow();
  }
  studio.dashboards.show(record);
  void vscode.window.showInformationMessage(`${run.name}: job ${launched.jobId} submitted${run.target === LOCAL ? '' : ` on ${run.target}`}.`, 'Show batch script').then((pick) => {
    if (pick) void showBatchScript(studio, record, launched.script);
  });
  return launched;
}

/** Submits (or resubmits) a launch spec's command to SLURM from its target, registers it and opens its dashboard. */
export async function startCommandOnSlurm(studio: StudioContext, specPath: string, spec: ResolvedLaunchSpec, relaunch?: { runDir: string; previous: RunManifest | undefined }): Promise<void> {
  const target = spec.target;
  const place = async (s: ResolvedLaunchSpec, report: (m: string) => void) => {
    if (target === LOCAL) return { companionRoot: path.join(studio.extension.extensionPath, COMPANION_DIR), runsDir: s.runsDir, cwd: s.cwd, ...(s.tensorboard ? { tensorboard: s.tensorboard } : {}) };
    const machine = studio.runs.machine(target) as SshMachine;
    const base = await machine.absolute(remoteBase());
    const companionRoot = await new RemoteCompanionInstaller(target, () => studio.runs.sshSettings(), studio.extension.extensionPath).ensure(base, report);
    return { companionRoot, runsDir: `${base}/runs`, cwd: await machine.absolute(s.cwd), ...(s.tensorboard ? { tensorboard: await machine.absolute(s.tensorboard) } : {}) };
  };
  await submitWithProgress(studio, { name: spec.name, configPath: specPath, target, resumed: !!relaunch }, (report) =>
    launchCommandOnSlurm({ cluster: studio.runs.cluster(target), place }, { specPath, spec, ...(relaunch ? { resumeRunDir: relaunch.runDir } : {}) }, report, relaunch?.previous),
  );
}

/** Opens a run's batch script: the file itself here, its text from the login host otherwise. */
export async function showBatchScript(studio: StudioContext, record: RunRecord, script: string): Promise<void> {
  const doc = record.target === LOCAL
    ? await vscode.workspace.openTextDocument(vscode.Uri.file(script))
    : await vscode.workspace.openTextDocument({ language: 'shellscript', content: (await studio.runs.machine(record.target).readFile(script, 1 << 20)).toString('utf8') });
  await vscode.window.showTextDocument(doc, { preview: true, preserveFocus: true });
}

/** "Stop run" for a SLURM run: cancel it while it waits; the graceful stop, then scancel after the grace, while it runs. */
export async function stopSlurmRun(studio: StudioContext, record: RunRecord, watch: RunWatch): Promise<void> {
  const jobId = watch.manifest!.slurm!.job_id!;
  const grace = (watch.manifest?.config as { launch?: { slurm?: { stop_grace_s?: number } } } | undefined)?.launch?.slurm?.stop_grace_s ?? 120;
  try {
    const outcome = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Stopping job ${jobId}` }, (progress) =>
      stopSlurmJob(studio.runs.cluster(record.target), jobId, grace, (message) => progress.report({ message }), watch.manifest?.slurm?.stop_signal ?? 'USR1'),
    );
    studio.output.info(`stop ${record.runDir} (job ${jobId} on ${record.target}): ${outcome}`);
    if (outcome === 'cancelled-after-grace') void vscode.window.showWarningMessage(`Job ${jobId} did not stop within ${grace} s of the stop signal: cancelled (scancel); its last checkpoint may be older.`);
  } catch (e) {
    void vscode.window.showErrorMessage(`Cannot stop job ${jobId}: ${(e as Error).message}`);
  }
  await watch.refreshJob();
}
