// The one owner of the extension's disposables: commands, output channel, status bar, clients.
// Features register here; nothing else holds long-lived editor resources.
import * as vscode from 'vscode';
import { registerCheckEnvironment } from './commands/check-environment';
import { registerLaunchRun } from './commands/launch-run';
import { registerOpenMemoryEstimator } from './commands/open-memory-estimator';
import { NativeRuntime } from './native-runtime';

export class StudioContext implements vscode.Disposable {
  readonly output: vscode.LogOutputChannel;
  readonly runtime: NativeRuntime;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(readonly extension: vscode.ExtensionContext) {
    this.output = vscode.window.createOutputChannel('FSDP Studio', { log: true });
    this.runtime = new NativeRuntime(extension.extensionPath);
    this.track(this.output);
  }

  async start(): Promise<void> {
    this.track(registerLaunchRun(this), registerCheckEnvironment(this), registerOpenMemoryEstimator(this));
    this.output.info(`FSDP Studio ${this.extension.extension.packageJSON.version} activated`);
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
