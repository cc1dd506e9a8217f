// "FSDP: Attach to run": pick a run — one this workspace knows, or one found in the runs folder of
// an SSH host — and watch it: its dashboard opens with the whole history, then follows it live.
import * as vscode from 'vscode';
import { checkHostAlias } from '../../core/remote/remote-command';
import { LOCAL } from '../runs/run-machine';
import type { RunRecord } from '../runs/run-registry';
import { runKey } from '../runs/run-watch';
import { sshConfigHosts } from '../runs/ssh-hosts';
import type { StudioContext } from '../studio-context';
import { runSummary, runTitle, targetTitle } from '../views/run-labels';

const ON_HOST = '$(remote) Runs on an SSH host…';

export function registerAttachRun(studio: StudioContext): vscode.Disposable {
  return vscode.commands.registerCommand('fsdp.attachRun', () => attachRun(studio));
}

async function attachRun(studio: StudioContext): Promise<void> {
  const runs = studio.runs;
  await runs.discover();
  type Item = vscode.QuickPickItem & { record?: RunRecord };
  const items: Item[] = runs.records().map((record) => {
    const watch = runs.existingWatch(runKey(record));
    return { label: runTitle(record, watch), description: `${targetTitle(record.target)} · ${runSummary(watch)}`, detail: record.runDir, record };
  });
  items.sort((a, b) => (b.record!.launchedAt ?? 0) - (a.record!.launchedAt ?? 0));
  items.push({ label: ON_HOST, alwaysShow: true });
  const pick = await vscode.window.showQuickPick(items, { title: 'Attach to run', placeHolder: 'A run of this workspace, or browse a host', matchOnDetail: true });
  if (!pick) return;
  const record = pick.record ?? (await pickRemoteRun(studio));
  if (!record) return;
  runs.remember(record);
  studio.dashboards.show(record);
}

/** Lists the run folders in the remote runs folder of a host the person picks. */
async function pickRemoteRun(studio: StudioContext): Promise<RunRecord | undefined> {
  const host = await pickSshHost(studio, 'Attach to a run on which host?');
  if (!host) return undefined;
  const machine = studio.runs.machine(host);
  const runsDir = await studio.remoteRunsDir(host);
  let dirs: string[];
  try {
    dirs = await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Listing runs on ${host}…` }, () => machine.listRunDirs(runsDir));
  } catch (e) {
    void vscode.window.showErrorMessage((e as Error).message);
    return undefined;
  }
  if (dirs.length === 0) {
    void vscode.window.showInformationMessage(`No runs in ${runsDir} on ${host}.`);
    return undefined;
  }
  const pick = await vscode.window.showQuickPick(dirs.reverse().map((d) => ({ label: d.slice(d.lastIndexOf('/') + 1), detail: d })), { title: `Runs on ${host}` });
  return pick && { target: host, runDir: pick.detail, runId: pick.label };
}

/** Hosts from the ssh config and the fsdp.ssh.hosts setting, or one typed in. */
export async function pickSshHost(studio: StudioContext, title: string): Promise<string | undefined> {
  const settings = studio.runs.sshSettings();
  const fromSettings = vscode.workspace.getConfiguration('fsdp.ssh').get<string[]>('hosts') ?? [];
  const hosts = [...new Set([...fromSettings, ...sshConfigHosts(settings.configFile)])].filter((h) => h !== LOCAL);
  const typed = '$(edit) Another host…';
  const pick = await vscode.window.showQuickPick([...hosts, typed], { title, placeHolder: 'SSH host alias (from your ssh config or the fsdp.ssh.hosts setting)' });
  if (pick !== typed) return pick;
  return vscode.window.showInputBox({ title, prompt: 'SSH host alias or user@host', validateInput: (v) => checkHostAlias(v.trim()) ?? null }).then((v) => v?.trim());
}
