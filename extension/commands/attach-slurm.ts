// "Attach to run" on a SLURM login host: the user's jobs there (squeue --me: queued, running and
// recently ended), each shown with its state and run folder (the job's working directory, which
// FSDP Studio's batch scripts set to the run folder); picking one watches that run.
import * as vscode from 'vscode';
import { checkHostAlias } from '../../core/remote/remote-command';
import { LOCAL } from '../../runs/machines/run-machine';
import type { RunRecord } from '../../runs/watch/run-registry';
import { sshConfigHosts } from '../../runs/machines/ssh-hosts';
import type { StudioContext } from '../studio-context';

type Item = vscode.QuickPickItem & { record?: RunRecord; host?: string };

/** Walks the quick pick through login host, then job; undefined when dismissed or nothing fits. */
export async function pickSlurmJob<T extends Item>(
  studio: StudioContext,
  qp: vscode.QuickPick<T>,
  accepted: (qp: vscode.QuickPick<T>) => Promise<T | undefined>,
): Promise<RunRecord | undefined> {
  const settings = studio.runs.sshSettings();
  const fromSettings = vscode.workspace.getConfiguration('fsdp.ssh').get<string[]>('hosts') ?? [];
  const hosts = [...new Set([...fromSettings, ...sshConfigHosts(settings.configFile)])].filter(
    (h) => h !== LOCAL && !checkHostAlias(h),
  );
  qp.value = '';
  qp.title = 'Jobs on which SLURM login host?';
  qp.placeholder = 'This machine, or an SSH host alias';
  qp.items = [{ label: 'This machine', host: LOCAL }, ...hosts.map((host) => ({ label: host, host }))] as T[];
  const host = (await accepted(qp))?.host;
  if (!host) return undefined;
  qp.title = `Your jobs on ${host === LOCAL ? 'this machine' : host}`;
  qp.placeholder = 'Asking squeue…';
  qp.items = [];
  qp.busy = true;
  let items: Item[];
  try {
    const jobs = await studio.runs.cluster(host).myJobs();
    items = jobs.map((job) => ({
      label: `job ${job.id}: ${job.name ?? ''}`,
      description: job.state.toLowerCase() + (job.reason ? ` (${job.reason})` : ''),
      detail: job.workDir,
      ...(job.workDir
        ? { record: { target: host, runDir: job.workDir, runId: job.workDir.slice(job.workDir.lastIndexOf('/') + 1) } }
        : {}),
    }));
  } catch (e) {
    void vscode.window.showErrorMessage((e as Error).message);
    return undefined;
  } finally {
    qp.busy = false;
  }
  if (items.length === 0) {
    void vscode.window.showInformationMessage(
      `You have no jobs on ${host === LOCAL ? 'this machine' : host} that SLURM still holds.`,
    );
    return undefined;
  }
  qp.placeholder = 'Job to attach to (its run folder is its working directory)';
  qp.items = items as T[];
  const record = (await accepted(qp))?.record;
  if (!record) return undefined;
  // Only a run folder can be watched: the job must be one FSDP Studio (or fsdp-train) started there.
  const manifest = await studio.runs
    .machine(host)
    .readManifest(record.runDir)
    .catch(() => undefined);
  if (!manifest) {
    void vscode.window.showErrorMessage(`${record.runDir} holds no run.json: that job is not an FSDP Studio run.`);
    return undefined;
  }
  return { ...record, runId: manifest.run_id, ...(manifest.name ? { name: manifest.name } : {}) };
}
