// The runs of this workspace, live: the registry on disk, one machine per target (this one, each
// SSH host), and one RunWatch per run that something shows. The runs view, the status bar, the
// dashboards and the commands all go through here.
import os from 'node:os';
import path from 'node:path';
import * as vscode from 'vscode';
import type { RunLogEntry } from '../../core/protocol/run-log-reader';
import { LocalMachine } from '../../runs/machines/local-machine';
import { localLoginHost, sshLoginHost } from '../../runs/machines/login-host';
import { LOCAL, type RunMachine, type TargetName } from '../../runs/machines/run-machine';
import { RunRegistry, type RunRecord } from '../../runs/watch/run-registry';
import { runKey, RunWatch, type RunRef } from '../../runs/watch/run-watch';
import { SlurmCluster } from '../../runs/slurm/slurm-cluster';
import { SshMachine } from '../../runs/machines/ssh-machine';
import type { SshSettings } from '../../runs/machines/ssh';

export class Runs implements vscode.Disposable {
  readonly registry: RunRegistry;
  private readonly machines = new Map<TargetName, RunMachine>();
  private readonly clusters = new Map<TargetName, SlurmCluster>();
  private readonly watches = new Map<string, RunWatch>();
  private readonly changed = new vscode.EventEmitter<RunWatch | undefined>();
  private readonly focusChanged = new vscode.EventEmitter<void>();
  private readonly appended = new vscode.EventEmitter<{ watch: RunWatch; entries: RunLogEntry[] }>();
  /** A run changed (undefined: the list itself changed). */
  readonly onDidChange = this.changed.event;
  /** Events read from a run's log, as they arrive. */
  readonly onDidAppend = this.appended.event;
  readonly onDidChangeFocus = this.focusChanged.event;
  private focusKey: string | undefined;

  constructor(storage: vscode.Uri) {
    this.registry = new RunRegistry(path.join(storage.fsPath, 'runs.json'));
  }

  /** SSH settings as they are now (read on every use, so changes apply without a reload). */
  sshSettings(): SshSettings {
    const cfg = vscode.workspace.getConfiguration('fsdp.ssh');
    const configFile = cfg.get<string>('configFile')?.trim();
    return {
      ...(configFile ? { configFile: expandHome(configFile) } : {}),
      connectTimeoutS: cfg.get<number>('connectTimeout') ?? 15,
    };
  }

  /** The run machine of `target`; one on another host only in a trusted workspace (see remoteRefusal). */
  machine(target: TargetName): RunMachine {
    let m = this.machines.get(target);
    if (!m) {
      refuseRemote(target);
      m = target === LOCAL ? new LocalMachine() : new SshMachine(target, () => this.sshSettings());
      this.machines.set(target, m);
    }
    return m;
  }

  /** The target as a SLURM login host (nothing is asked of it until a run has a job there). */
  cluster(target: TargetName): SlurmCluster {
    let c = this.clusters.get(target);
    if (!c) {
      refuseRemote(target);
      c = new SlurmCluster(target === LOCAL ? localLoginHost() : sshLoginHost(target, () => this.sshSettings()));
      this.clusters.set(target, c);
    }
    return c;
  }

  records(): RunRecord[] {
    return this.registry.list();
  }

  /** The watch of a run, created and started on first use. */
  watch(ref: RunRef): RunWatch {
    const key = runKey(ref);
    let w = this.watches.get(key);
    if (!w) {
      w = new RunWatch(
        { target: ref.target, runDir: ref.runDir, ...(ref.format ? { format: ref.format } : {}) },
        this.machine(ref.target),
        this.cluster(ref.target),
      );
      w.stopRequested = this.registry.get(key)?.stopRequestedAt !== undefined;
      this.watches.set(key, w);
      const watch = w;
      w.onChange(({ entries }) => {
        if (entries.length) this.appended.fire({ watch, entries });
        this.changed.fire(watch);
      });
      void w.start().then(() => this.changed.fire(watch));
    }
    return w;
  }

  /** The watch of a run if one exists (the runs view shows remote runs without connecting). */
  existingWatch(key: string): RunWatch | undefined {
    return this.watches.get(key);
  }

  /** Adds a run to the registry (and the view). */
  remember(record: RunRecord): string {
    const key = this.registry.put(record);
    this.changed.fire(undefined);
    return key;
  }

  forget(key: string): void {
    this.watches.get(key)?.dispose();
    this.watches.delete(key);
    this.registry.remove(key);
    if (this.focusKey === key) this.focus(undefined);
    this.changed.fire(undefined);
  }

  /** The run the status bar follows: the last one launched, attached or looked at. */
  get focused(): RunWatch | undefined {
    return this.focusKey ? this.watches.get(this.focusKey) : undefined;
  }

  focus(key: string | undefined): void {
    if (this.focusKey === key) return;
    this.focusKey = key;
    this.focusChanged.fire();
  }

  /**
   * Finds run folders in the workspace (`runs/<id>/run.json`), registers them and starts watching
   * every local run and every remote run that was live when last seen, so notifications and the
   * view are current after a reload. In an untrusted workspace remote runs are listed, not watched
   * (watching connects); trust granted later calls this again.
   */
  async discover(): Promise<void> {
    const found = await vscode.workspace.findFiles('**/runs/*/run.json', '{**/node_modules/**,**/.git/**}', 1000);
    for (const uri of found) {
      const runDir = path.dirname(uri.fsPath);
      if (!this.registry.get(runKey({ target: LOCAL, runDir })))
        this.registry.put({ target: LOCAL, runDir, runId: path.basename(runDir) });
    }
    for (const r of this.records()) {
      if (r.target === LOCAL || (r.launchedAt !== undefined && vscode.workspace.isTrusted)) this.watch(r);
    }
    this.changed.fire(undefined);
  }

  dispose(): void {
    for (const w of this.watches.values()) w.dispose();
    this.watches.clear();
    this.changed.dispose();
    this.focusChanged.dispose();
    this.appended.dispose();
  }
}

/**
 * Why `what` (a dashboard, a log, …) of runs on `targets` is refused now, or undefined. A run on
 * another host is reached over SSH: ssh reads the person's SSH config, which may run a
 * ProxyCommand or a Match exec, and connects. Issue 40 item 1: nothing connects anywhere before the
 * workspace is trusted — not even for runs recorded earlier from the person's own settings. Runs on
 * this machine are files read here and stay visible.
 */
export function remoteRefusal(targets: TargetName[], what: string): string | undefined {
  const remote = [...new Set(targets.filter((t) => t !== LOCAL))];
  if (remote.length === 0 || vscode.workspace.isTrusted) return undefined;
  return (
    `${what} on ${remote.join(', ')} connects to ${remote.length > 1 ? 'them' : 'it'} over SSH, which an untrusted ` +
    'workspace does not allow: trust this workspace first (Workspaces: Manage Workspace Trust). Runs on this ' +
    'machine can be looked at untrusted.'
  );
}

/** Shows remoteRefusal's message, if any; true when `what` may go on. */
export function mayReach(targets: TargetName[], what: string): boolean {
  const refusal = remoteRefusal(targets, what);
  if (refusal) void vscode.window.showWarningMessage(refusal);
  return !refusal;
}

/** The last guard under the commands' own: a machine on another host is never made untrusted. */
function refuseRemote(target: TargetName): void {
  const refusal = remoteRefusal([target], 'Reaching a run');
  if (refusal) throw new Error(refusal);
}

function expandHome(p: string): string {
  return p === '~' || p.startsWith('~/') ? path.join(os.homedir(), p.slice(1)) : p;
}

/** fsdp.remote.directory: where runtimes, data and runs live on SSH hosts. */
export function remoteBase(): string {
  return vscode.workspace.getConfiguration('fsdp.remote').get<string>('directory')?.trim() || '~/.fsdp-studio';
}
