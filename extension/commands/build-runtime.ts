// "FSDP: Build native runtime", and the build on first use: an installed extension builds its
// native runtime on this machine the first time a launch needs it (runs/local-runtime.ts), with a
// progress notification; a failure names the missing Debian packages. Then the addon is loaded and
// the config checks restart to use it.
import { existsSync } from 'node:fs';
import * as vscode from 'vscode';
import { BuildCancelled } from '../../runs/runtime/local-runtime';
import type { StudioContext } from '../studio-context';

export function registerBuildRuntime(studio: StudioContext): vscode.Disposable {
  return vscode.commands.registerCommand('fsdp.buildRuntime', async () => {
    if (studio.localRuntime.isBuilt()) {
      void vscode.window.showInformationMessage(`The native runtime is built: ${studio.localRuntime.dir}`);
      return;
    }
    if (await ensureRuntimeBuilt(studio))
      void vscode.window.showInformationMessage(`Native runtime built in ${studio.localRuntime.dir}.`);
  });
}

/** Builds the local runtime if it is not built; false (after saying why) when it cannot be. */
export async function ensureRuntimeBuilt(studio: StudioContext): Promise<boolean> {
  const runtime = studio.localRuntime;
  if (runtime.isBuilt()) return true;
  if (!vscode.workspace.isTrusted) {
    void vscode.window.showWarningMessage(
      'Building the native runtime runs CMake and a compiler: trust this workspace first.',
    );
    return false;
  }
  const started = Date.now();
  const openLog = () => void vscode.window.showTextDocument(vscode.Uri.file(runtime.buildLog), { preview: true });
  studio.output.info(`native runtime build: its full output is kept in ${runtime.buildLog} when it ends`);
  try {
    await vscode.window.withProgress(
      {
        location: vscode.ProgressLocation.Notification,
        title: 'FSDP Studio: building the native runtime',
        cancellable: true,
      },
      (progress, token) => {
        const cancel = new AbortController();
        token.onCancellationRequested(() => cancel.abort());
        let shown = 0;
        return runtime.ensure((message, percent) => {
          // The bar moves by increments; the percentage never goes back (build-progress.ts).
          const increment = percent !== undefined && percent > shown ? percent - shown : undefined;
          if (percent !== undefined) shown = Math.max(shown, percent);
          progress.report({ message, ...(increment ? { increment } : {}) });
          studio.output.info(`native runtime build: ${message}`);
        }, cancel.signal);
      },
    );
  } catch (e) {
    if (e instanceof BuildCancelled) {
      studio.output.info(`native runtime build: ${e.message}`);
      void vscode.window.showInformationMessage(
        'Native runtime build cancelled. It starts again when a launch needs it, or with "FSDP: Build native runtime".',
      );
      return false;
    }
    const message = (e as Error).message;
    studio.output.error(message);
    const [first] = message.split('\n');
    const actions = existsSync(runtime.buildLog) ? ['Open build log', 'Show output'] : ['Show output'];
    void vscode.window.showErrorMessage(first, ...actions).then((pick) => {
      if (pick === 'Open build log') openLog();
      else if (pick) studio.output.show(true);
    });
    return false;
  }
  studio.output.info(`native runtime built in ${runtime.dir} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  studio.runtime.reset();
  await studio.restartConfigChecks();
  return true;
}
