// The Python interpreter the Python extension (ms-python.python) has selected for the workspace,
// read through its public API (the `environments` part of its exports, as the
// @vscode/python-extension facade documents it): getActiveEnvironmentPath, then resolveEnvironment
// for the executable (the active path may name an environment's folder, not its python). Without
// that extension, or when it cannot say, there is no selection and launches keep their default.
// Only `import type` of vscode here: the resolution is tested with an exports object of that shape.
import type * as vscode from 'vscode';

export const PYTHON_EXTENSION_ID = 'ms-python.python';

/** The part of the Python extension's exports read here (its published `environments` API). */
export interface PythonEnvironmentsApi {
  ready?: Promise<void>;
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { id: string; path: string };
    resolveEnvironment(
      environment: { id: string; path: string } | string,
    ): Promise<{ executable: { uri?: { fsPath: string } } } | undefined>;
  };
}

/** What was found: the interpreter's path, or why there is none (shown in Check environment). */
export type SelectedPython = { path: string } | { none: string };

/** vscode.extensions, as far as it is used here. */
export interface Extensions {
  getExtension(id: string): { isActive: boolean; exports: unknown; activate(): Thenable<unknown> } | undefined;
}

/** The selected interpreter for `resource` (a file or folder of the workspace). */
export async function selectedPython(extensions: Extensions, resource?: vscode.Uri): Promise<SelectedPython> {
  const ext = extensions.getExtension(PYTHON_EXTENSION_ID);
  if (!ext) return { none: 'the Python extension (ms-python.python) is not installed' };
  try {
    const api = (ext.isActive ? ext.exports : await ext.activate()) as PythonEnvironmentsApi | undefined;
    const envs = api?.environments;
    if (!envs || typeof envs.getActiveEnvironmentPath !== 'function' || typeof envs.resolveEnvironment !== 'function') {
      return { none: 'this version of the Python extension has no environments API' };
    }
    const active = envs.getActiveEnvironmentPath(resource);
    const resolved = await envs.resolveEnvironment(active);
    const exe = resolved?.executable.uri?.fsPath;
    if (exe) return { path: exe };
    return {
      none: `the Python extension's selected environment (${active.path}) has no Python interpreter it can resolve`,
    };
  } catch (e) {
    return { none: `the Python extension did not answer: ${(e as Error).message}` };
  }
}
