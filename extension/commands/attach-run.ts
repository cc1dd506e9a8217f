// "FSDP: Attach to run": pick a run — one this workspace knows, a TensorBoard log folder of the
// workspace, or one found on an SSH host (its runs folder, or TensorBoard log folders under a folder
// the person names) — and watch it: its dashboard opens with the whole history, then follows it
// live. One quick pick walks through the steps (run, or host then run), so nothing flickers.
import path from 'node:path';
import * as vscode from 'vscode';
import { checkHostAlias } from '../../core/remote/remote-command';
import { tensorBoardFolders } from '../../runs/watch/tensorboard-folders';
import { LOCAL } from '../../runs/machines/run-machine';
import type { RunRecord } from '../../runs/watch/run-registry';
import { runKey } from '../../runs/watch/run-watch';
import { sshConfigHosts } from '../../runs/machines/ssh-hosts';
import type { SshMachine } from '../../runs/machines/ssh-machine';
import type { StudioContext } from '../studio-context';
import { pickSlurmJob } from './attach-slurm';
import { runSummary, runTitle, targetTitle } from '../views/run-labels';
import { requireTrust } from './launch-run';

const ON_HOST = '$(remote) Runs on an SSH host…';
const SLURM_JOBS = '$(server-process) Your jobs on a SLURM login host…';
const OTHER_HOST = '$(edit) Another host (type its alias)…';
const HOST_TENSORBOARD = '$(folder) TensorBoard log folders under a folder on this host…';

type Item = vscode.QuickPickItem & { record?: RunRecord; host?: string };

export function registerAttachRun(studio: StudioContext): vscode.Disposable {
  return vscode.commands.registerCommand('fsdp.attachRun', () => attachRun(studio));
}

async function attachRun(studio: StudioContext): Promise<void> {
  // Invoked by id the enablement does not apply: attaching reads the SSH config the settings name,
  // connects to hosts and runs squeue on login hosts.
  if (!requireTrust('Attaching to a run reads your SSH config and connects to hosts')) return;
  const runs = studio.runs;
  await runs.discover();
  const qp = vscode.window.createQuickPick<Item>();
  qp.title = 'Attach to run';
  qp.placeholder = 'A run of this workspace, or browse a host';
  qp.matchOnDescription = true;
  qp.matchOnDetail = true;
  // Stays open when a webview takes the focus (a dashboard loading, or restored after a reload):
  // a run's picker must not vanish under the person's cursor. Escape still closes it.
  qp.ignoreFocusOut = true;
  const known: Item[] = runs.records().map((record) => {
    const watch = runs.existingWatch(runKey(record));
    return {
      label: runTitle(record, watch),
      description: `${targetTitle(record.target)} · ${runSummary(watch)}`,
      detail: record.runDir,
      record,
    };
  });
  known.sort((a, b) => (b.record!.launchedAt ?? 0) - (a.record!.launchedAt ?? 0));
  const boards = (await workspaceTensorBoardFolders()).filter(
    (dir) => !runs.registry.get(runKey({ target: LOCAL, runDir: dir })),
  );
  const tensorboard: Item[] = boards.map((dir) => ({
    label: `$(graph) ${vscode.workspace.asRelativePath(dir)}`,
    description: 'TensorBoard log folder',
    detail: dir,
    record: { target: LOCAL, runDir: dir, runId: path.basename(dir), format: 'tensorboard' },
  }));
  qp.items = [...known, ...tensorboard, { label: ON_HOST, alwaysShow: true }, { label: SLURM_JOBS, alwaysShow: true }];
  qp.show();
  try {
    const first = await accepted(qp);
    const record =
      first?.record ??
      (first?.label === SLURM_JOBS
        ? await pickSlurmJob(studio, qp, accepted)
        : first
          ? await remoteRun(studio, qp)
          : undefined);
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
  let runsDir: string;
  try {
    runsDir = await studio.remoteRunsDir(host);
    dirs = await studio.runs.machine(host).listRunDirs(runsDir);
  } catch (e) {
    void vscode.window.showErrorMessage((e as Error).message);
    return undefined;
  } finally {
    qp.busy = false;
  }
  qp.placeholder = dirs.length
    ? 'Run to attach to'
    : `No runs in ${runsDir} on ${host}: look for TensorBoard log folders?`;
  qp.items = [
    ...dirs.reverse().map((d) => ({
      label: d.slice(d.lastIndexOf('/') + 1),
      detail: d,
      record: { target: host!, runDir: d, runId: d.slice(d.lastIndexOf('/') + 1) },
    })),
    { label: HOST_TENSORBOARD, alwaysShow: true, host },
  ];
  const run = await accepted(qp);
  return run?.record ?? (run ? remoteTensorBoard(studio, qp, host) : undefined);
}

/** TensorBoard log folders under a folder the person names on the host. */
async function remoteTensorBoard(
  studio: StudioContext,
  qp: vscode.QuickPick<Item>,
  host: string,
): Promise<RunRecord | undefined> {
  qp.items = [];
  qp.title = `TensorBoard log folders on ${host}`;
  qp.placeholder = `A folder on ${host} to look under (absolute or ~/…), then Enter`;
  qp.value = '~';
  const typed = await acceptedValue(qp);
  if (!typed) return undefined;
  qp.value = '';
  qp.placeholder = `Looking for event files under ${typed} on ${host}…`;
  qp.busy = true;
  let folders: string[];
  try {
    const machine = studio.runs.machine(host) as SshMachine;
    folders = await tensorBoardFolders(machine, await machine.absolute(typed));
  } catch (e) {
    void vscode.window.showErrorMessage((e as Error).message);
    return undefined;
  } finally {
    qp.busy = false;
  }
  if (folders.length === 0) {
    void vscode.window.showInformationMessage(
      `No TensorBoard event files (events.out.tfevents.*) under ${typed} on ${host}.`,
    );
    return undefined;
  }
  qp.placeholder = 'TensorBoard log folder to attach to (one run per folder)';
  qp.items = folders.map((d) => ({
    label: `$(graph) ${d.slice(d.lastIndexOf('/') + 1)}`,
    description: 'TensorBoard log folder',
    detail: d,
    record: { target: host, runDir: d, runId: d.slice(d.lastIndexOf('/') + 1), format: 'tensorboard' },
  }));
  return (await accepted(qp))?.record;
}

/** The workspace's TensorBoard log folders, except the event files native runs write beside metrics.jsonl. */
async function workspaceTensorBoardFolders(): Promise<string[]> {
  const files = await vscode.workspace.findFiles('**/events.out.tfevents.*', '{**/node_modules/**,**/.git/**}', 2000);
  const dirs = [...new Set(files.map((f) => path.dirname(f.fsPath)))];
  const runFolders = new Set(
    (await vscode.workspace.findFiles('**/run.json', '{**/node_modules/**,**/.git/**}', 2000)).map((f) =>
      path.dirname(f.fsPath),
    ),
  );
  return dirs.filter((d) => !runFolders.has(d)).sort();
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
