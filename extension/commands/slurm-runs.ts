// The editor's side of SLURM runs: the memory check for the job's shape before it is submitted
// (through the launch door, start-launch.ts), stopping by job id, and the batch script shown. The work
// itself is in runs/slurm/, which the tests drive against a real SLURM.
import * as vscode from 'vscode';
import type { ResolvedRunConfig } from '../../core/config/run-config';
import { jobMemoryCheck } from '../../runs/slurm/slurm-memory';
import { LOCAL } from '../../runs/machines/run-machine';
import type { RunRecord } from '../../runs/watch/run-registry';
import type { RunWatch } from '../../runs/watch/run-watch';
import { stopSlurmJob } from '../../runs/slurm/slurm-control';
import type { StudioContext } from '../studio-context';

/** Whether a config is launched as a SLURM job. */
export function onSlurm(config: ResolvedRunConfig): boolean {
  return config.launch.slurm !== undefined;
}

/**
 * The memory check for the job's shape: the estimator's per-rank peak at its world size against the
 * partition's GPU (or a node's memory per task on the CPU). Asks when it does not fit; says in the
 * output what it compared, or why it could not.
 */
export async function slurmMemoryFits(
  studio: StudioContext,
  config: ResolvedRunConfig,
  configPath: string,
): Promise<boolean> {
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
  const choice = await vscode.window.showWarningMessage(
    `The job's memory estimate ${check.message}. Submit anyway?`,
    { modal: true },
    'Submit anyway',
  );
  return choice === 'Submit anyway';
}

/** Opens a run's batch script: the file itself here, its text from the login host otherwise. */
export async function showBatchScript(studio: StudioContext, record: RunRecord, script: string): Promise<void> {
  const doc =
    record.target === LOCAL
      ? await vscode.workspace.openTextDocument(vscode.Uri.file(script))
      : await vscode.workspace.openTextDocument({
          language: 'shellscript',
          content: (await studio.runs.machine(record.target).readFile(script, 1 << 20)).toString('utf8'),
        });
  await vscode.window.showTextDocument(doc, { preview: true, preserveFocus: true });
}

/** "Stop run" for a SLURM run: cancel it while it waits; the graceful stop, then scancel after the grace, while it runs. */
export async function stopSlurmRun(studio: StudioContext, record: RunRecord, watch: RunWatch): Promise<void> {
  const jobId = watch.manifest!.slurm!.job_id!;
  const grace =
    (watch.manifest?.config as { launch?: { slurm?: { stop_grace_s?: number } } } | undefined)?.launch?.slurm
      ?.stop_grace_s ?? 120;
  try {
    const outcome = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Stopping job ${jobId}` },
      (progress) =>
        stopSlurmJob(
          studio.runs.cluster(record.target),
          jobId,
          grace,
          (message) => progress.report({ message }),
          watch.manifest?.slurm?.stop_signal ?? 'USR1',
          record.runDir,
        ),
    );
    studio.output.info(`stop ${record.runDir} (job ${jobId} on ${record.target}): ${outcome}`);
    if (outcome === 'cancelled-after-grace')
      void vscode.window.showWarningMessage(
        `Job ${jobId} did not stop within ${grace} s of the stop signal: cancelled (scancel); its last checkpoint may be older.`,
      );
  } catch (e) {
    void vscode.window.showErrorMessage(`Cannot stop job ${jobId}: ${(e as Error).message}`);
  }
  await watch.refreshJob();
}
