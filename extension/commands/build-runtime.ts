// "FSDP: Build native runtime", and the build on first use: an installed extension builds its
// native runtime on this machine the first time a launch needs it (runs/local-runtime.ts), with a
// progress notification; a failure names the missing Debian packages. Then the addon is loaded and
// the config checks restart to use it.
import * as vscode from 'vscode';
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
  try {
    await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'FSDP Studio: building the native runtime' },
      (progress) =>
        runtime.ensure((message) => {
          progress.report({ message });
          studio.output.info(`native runtime build: ${message}`);
        }),
    );
  } catch (e) {
    const message = (e as Error).message;
    studio.output.error(message);
    const [first] = message.split('\n');
    void vscode.window.showErrorMessage(first, 'Show output').then((pick) => pick && studio.output.show(true));
    return false;
  }
  studio.output.info(`native runtime built in ${runtime.dir} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  studio.runtime.reset();
  await studio.restartConfigChecks();
  return true;
}
