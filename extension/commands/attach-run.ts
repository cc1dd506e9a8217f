// "FSDP: Attach to run": pick a run — one this workspace knows, or one found in the runs folder of
// an SSH host — and watch it: its dashboard opens with the whole history, then follows it live.
// One quick pick walks through the steps (run, or host then run), so nothing flickers between them.
import * as vscode from 'vscode';
import { checkHostAlias } from '../../core/remote/remote-command';
import { LOCAL } from '../runs/run-machine';
import type { RunRecord } from '../runs/run-registry';
import { runKey } from '../runs/run-watch';
import { sshConfigHosts } from '../runs/ssh-hosts';
import type { StudioContext } from '../studio-context';
import { pickSlurmJob } from './attach-slurm';
import { runSummary, runTitle, targetTitle } from '../views/run-labels';

const ON_HOST = '$(remote) Runs on an SSH host…';
const SLURM_JOBS = '$(server-process) Your jobs on a SLURM login host…';
const OTHER_HOST = '$(edit) Another host (type its alias)…';

type Item = vscode.QuickPickItem & { record?: RunRecord; host?: string };

export function registerAttachRun(studio: StudioContext): vscode.Disposable {
  return vscode.commands.registerCommand('fsdp.attachRun', () => attachRun(studio));
}

async function attachRun(studio: StudioContext): Promise<void> {
  const runs = studio.runs;
  await runs.discover();
  const qp = vscode.window.createQuickPick<Item>();
  qp.title = 'Attach to run';
  qp.placeholder = 'A run of this workspace, or browse a host';
  qp.matchOnDescription = true;
  qp.matchOnDetail = true;
  const known: Item[] = runs.records().map((record) => {
    const watch = runs.existingWatch(runKey(record));
    return { label: runTitle(record, watch), description: `${targetTitle(record.target)} · ${runSummary(watch)}`, detail: record.runDir, record };
  });
  known.sort((a, b) => (b.record!.launchedAt ?? 0) - (a.record!.launchedAt ?? 0));
  qp.items = [...known, { label: ON_HOST, alwaysShow: true }, { label: SLURM_JOBS, alwaysShow: true }];
  qp.show();
  try {
    const first = await accepted(qp);
    const record = first?.record ?? (first?.label === SLURM_JOBS ? await pickSlurmJob(studio, qp, accepted) : first ? await remoteRun(studio, qp) : undefined);
    if (!record) return;
    runs.remember(record);
    studio.dashboards.show(record);
  } finally {
    qp.dispose();
  }
}

/** The host step, then the run step, in the same quick pick. */
async function remoteRun(studio: StudioContext, qp: vscode.QuickPick<Item>): Promise<RunRecord | undefined> {
  const settings = studio.runs.sshSettings();
  const fromSettings = vscode.workspace.getConfiguration('fsdp.ssh').get<string[]>('hosts') ?? [];
  const hosts = [...new Set([...fromSettings, ...sshConfigHosts(settings.configFile)])].filter((h) => h !== LOCAL);
  qp.value = '';
  qp.title = 'Attach to a run on which host?';
  qp.placeholder = 'SSH host alias (from your ssh config or the fsdp.ssh.hosts setting)';
  qp.items = [...hosts.map((host) => ({ label: host, host })), { label: OTHER_HOST, alwaysShow: true }];
  const pick = await accepted(qp);
  if (!pick) return undefined;
  let host = pick.host;
  if (!host) {
    qp.items = [];
    qp.placeholder = 'Type an SSH host alias or user@host, then Enter';
    const typed = await acceptedValue(qp);
    const bad = typed === undefined ? undefined : checkHostAlias(typed);
    if (bad) void vscode.window.showErrorMessage(bad);
    if (typed === undefined || bad) return undefined;
    host = typed;
  }
  qp.title = `Runs on ${host}`;
  qp.placeholder = `Listing runs on ${host}…`;
  qp.items = [];
  qp.busy = true;
  let dirs: string[];
  try {
    const runsDir = await studio.remoteRunsDir(host);
    dirs = await studio.runs.machine(host).listRunDirs(runsDir);
    if (dirs.length === 0) {
      void vscode.window.showInformationMessage(`No runs in ${runsDir} on ${host}.`);
      return undefined;
    }
  } catch (e) {
    void vscode.window.showErrorMessage((e as Error).message);
    return undefined;
  } finally {
    qp.busy = false;
  }
  qp.placeholder = 'Run to attach to';
  qp.items = dirs.reverse().map((d) => ({ label: d.slice(d.lastIndexOf('/') + 1), detail: d, record: { target: host!, runDir: d, runId: d.slice(d.lastIndexOf('/') + 1) } }));
  return (await accepted(qp))?.record;
}

/** The item accepted next, or undefined when the quick pick is dismissed. */
function accepted(qp: vscode.QuickPick<Item>): Promise<Item | undefined> {
  return new Promise((resolve) => {
    const subs = [
      qp.onDidAccept(() => {
        subs.forEach((s) => s.dispose());
        resolve(qp.selectedItems[0]);
      }),
      qp.onDidHide(() => {
        subs.forEach((s) => s.dispose());
        resolve(undefined);
      }),
    ];
  });
}

/** The text typed when Enter is pressed, or undefined when the quick pick is dismissed. */
function acceptedValue(qp: vscode.QuickPick<Item>): Promise<string | undefined> {
  return new Promise((resolve) => {
    const subs = [
      qp.onDidAccept(() => {
        subs.forEach((s) => s.dispose());
        resolve(qp.value.trim() || undefined);
      }),
      qp.onDidHide(() => {
        subs.forEach((s) => s.dispose());
        resolve(undefined);
      }),
    ];
  });
}
