// The one owner of the extension's disposables: commands, output channel, status bar, clients.
// Features register here; nothing else holds long-lived editor resources.
import { existsSync } from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { registerAttachRun } from './commands/attach-run';
import { registerBuildRuntime } from './commands/build-runtime';
import { registerCheckEnvironment } from './commands/check-environment';
import { registerDeleteRun } from './commands/delete-run';
import { registerLaunchRun } from './commands/launch-run';
import { remoteBase } from './runs/runs';
import { registerNewRunConfig } from './commands/new-run-config';
import { registerOpenMemoryEstimator } from './commands/open-memory-estimator';
import { registerChooseModel } from './commands/choose-model';
import { showDeepSpeedCommentsAsJsonc } from './deepspeed-json-comments';
import { registerOpenRun } from './commands/open-run';
import { registerPrepareSampleData } from './commands/prepare-sample-data';
import { registerPrepareTrainingData } from './commands/prepare-training-data';
import { registerExportHf } from './commands/export-hf';
import { registerRenameRun } from './commands/rename-run';
import { registerResumeRun } from './commands/resume-run';
import { registerStopRun } from './commands/stop-run';
import { startConfigLanguageClient, type ConfigChecks } from './language-client';
import { NativeRuntime } from './native-runtime';
import { registerLaunchLens } from './run-config-lens';
import { registerTorchtitanPythonLens } from './torchtitan-python-lens';
import { LocalRuntime } from '../runs/runtime/local-runtime';
import { notifyRunEvents } from './runs/run-notifications';
import { showCheckpointProgress } from './runs/run-progress';
import { notifySpikes } from './runs/spike-notifications';
import { Runs } from './runs/runs';
import type { SshMachine } from '../runs/machines/ssh-machine';
import { RunStatusBar } from './views/run-status-bar';
import { RunsTree } from './views/runs-tree';
import { CompareRuns } from './webviews/compare-runs';
import { NanDiagnostics } from './webviews/nan-diagnostics';
import { RunDashboards } from './webviews/run-dashboard';
import { SpikeViews } from './webviews/spike-view';

export class StudioContext implements vscode.Disposable {
  readonly output: vscode.LogOutputChannel;
  readonly runtime: NativeRuntime;
  /** Where the native runtime is on this machine, and its build on first use. */
  readonly localRuntime: LocalRuntime;
  /** The workspace's runs: registry, machines, watches. */
  readonly runs: Runs;
  readonly dashboards: RunDashboards;
  private readonly disposables: vscode.Disposable[] = [];
  private configChecks: ConfigChecks | undefined;

  constructor(readonly extension: vscode.ExtensionContext) {
    this.output = vscode.window.createOutputChannel('FSDP Studio', { log: true });
    this.localRuntime = new LocalRuntime(extension.extensionPath);
    this.runtime = new NativeRuntime(extension.extensionPath, this.localRuntime.dir);
    this.runs = new Runs(extension.storageUri ?? extension.globalStorageUri);
    this.dashboards = new RunDashboards(extension.extensionUri, this.runs);
    this.track(this.output, this.runs, this.dashboards);
  }

  async start(): Promise<void> {
    this.track(
      registerLaunchRun(this),
      registerCheckEnvironment(this),
      registerOpenMemoryEstimator(this),
      registerNewRunConfig(this),
      showDeepSpeedCommentsAsJsonc(),
    );
    this.track(
      registerAttachRun(this),
      registerStopRun(this),
      ...registerResumeRun(this),
      ...registerOpenRun(this),
      registerLaunchLens(),
      registerTorchtitanPythonLens(this.extension.extensionPath),
    );
    this.track(
      registerDeleteRun(this),
      registerRenameRun(this),
      registerPrepareSampleData(this),
      registerPrepareTrainingData(this),
      registerBuildRuntime(this),
      registerExportHf(this),
    );
    const tree = new RunsTree(this.runs);
    this.track(
      tree,
      vscode.window.createTreeView('fsdp.runs', { treeDataProvider: tree, showCollapseAll: false }),
      vscode.commands.registerCommand('fsdp.refreshRuns', () => this.runs.discover()),
      new RunStatusBar(this.runs),
      notifyRunEvents(this.runs),
      showCheckpointProgress(this.runs),
      notifySpikes(this.runs),
      new CompareRuns(this.extension.extensionUri, this.runs),
      new NanDiagnostics(this.extension.extensionUri, this.runs),
      new SpikeViews(this.extension.extensionUri, this.runs),
    );
    void this.runs.discover().catch((e: Error) => this.output.warn(`finding runs failed: ${e.message}`));
    // Untrusted, discover() lists remote runs without watching them (watching connects over SSH).
    this.track(
      vscode.workspace.onDidGrantWorkspaceTrust(
        () => void this.runs.discover().catch((e: Error) => this.output.warn(`finding runs failed: ${e.message}`)),
      ),
    );
    this.configChecks = await startConfigLanguageClient(this);
    this.track(this.configChecks);
    const checks = this.configChecks;
    this.track(registerChooseModel(this.extension.workspaceState, (p) => checks.sendModelChoices(p)));
    this.output.info(`FSDP Studio ${this.extension.extension.packageJSON.version} activated`);
  }

  /** The trainer's command-line entry (dist/cli/fsdp-train.js), when this build has it. */
  trainerCli(): string | undefined {
    const cli = path.join(this.extension.extensionPath, 'dist', 'cli', 'fsdp-train.js');
    return existsSync(cli) ? cli : undefined;
  }

  /** Restarts the config checks (the language server reads the addon at start-up). */
  async restartConfigChecks(): Promise<void> {
    await this.configChecks?.restart();
  }

  /** Where runs live on an SSH host: <fsdp.remote.directory>/runs, made absolute there. */
  async remoteRunsDir(host: string): Promise<string> {
    return `${await (this.runs.machine(host) as SshMachine).absolute(remoteBase())}/runs`;
  }

  /** Registers disposables to be released on deactivation, in reverse order. */
  track(...items: vscode.Disposable[]): void {
    this.disposables.push(...items);
  }

  async dispose(): Promise<void> {
    for (const d of this.disposables.splice(0).reverse()) {
      try {
        await d.dispose();
      } catch (e) {
        console.error('FSDP Studio: dispose failed', e);
      }
    }
  }
}
