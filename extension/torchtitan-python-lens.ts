// The memory lens of torchtitan 0.3's Python configurations: above each function returning
// Trainer.Config (core/config/torchtitan-python.ts finds them in the text), the per-GPU memory of the
// degrees the config states, on the GPU chosen in the memory panel (fsdp.estimator.gpu). The figures
// need the function run (runs/torchtitan/python-configs.ts runs the companion's probe in the
// workspace's Python), so an untrusted workspace gets a lens that says so and nothing runs. The file
// as saved is what runs: a save runs it again.
import * as vscode from 'vscode';
import { torchtitanConfigFunctions } from '../core/config/torchtitan-python';
import {
  torchtitanPythonLens,
  torchtitanPythonOptions,
  type ProbeAnswer,
} from '../core/memory/inputs/from-torchtitan-python';
import { probeScript, probeTorchtitanConfigs, pythonForConfig } from '../runs/torchtitan/python-configs';
import { selectedPython } from './python-interpreter';

type Probed = { answer: ProbeAnswer | { error: string }; python: string; chosenBy: string };

export function registerTorchtitanPythonLens(extensionRoot: string): vscode.Disposable {
  const changed = new vscode.EventEmitter<void>();
  /** Per file: the probe's answer once it came, or the pending run (a save drops it: its answer is then stale). */
  const probed = new Map<string, Probed | { running: symbol }>();
  const run = async (uri: vscode.Uri) => {
    const key = uri.toString();
    const running = Symbol(key);
    probed.set(key, { running });
    const selected = await selectedPython(vscode.extensions, uri);
    const root = vscode.workspace.getWorkspaceFolder(uri)?.uri.fsPath;
    const chosen = pythonForConfig(uri.fsPath, 'path' in selected ? selected.path : undefined, root);
    const answer = await probeTorchtitanConfigs(chosen.python, probeScript(extensionRoot), uri.fsPath);
    const now = probed.get(key);
    if (!now || !('running' in now) || now.running !== running) return;
    probed.set(key, { answer, ...chosen });
    changed.fire();
  };
  const provider: vscode.CodeLensProvider = {
    onDidChangeCodeLenses: changed.event,
    provideCodeLenses(document) {
      const functions = torchtitanConfigFunctions(document.getText());
      if (functions.length === 0) return [];
      const lens = (line: number, title: string, tooltip: string, command = '') =>
        new vscode.CodeLens(new vscode.Range(line, 0, line, 0), { title, tooltip, command });
      if (!vscode.workspace.isTrusted)
        return functions.map((f) =>
          lens(
            f.line,
            'memory: needs a trusted workspace (the estimate runs this config)',
            `Estimating ${f.name}() runs it in the workspace's Python; trust the workspace to allow it.`,
            'workbench.trust.manage',
          ),
        );
      const key = document.uri.toString();
      const state = probed.get(key);
      if (state === undefined) void run(document.uri);
      if (state === undefined || 'running' in state)
        return functions.map((f) => lens(f.line, 'memory: running the config…', `Calling ${f.name}()`));
      const panelGpu = vscode.workspace.getConfiguration('fsdp.estimator').get<string | null>('gpu') ?? undefined;
      const options = torchtitanPythonOptions(document.getText(), panelGpu);
      const where = `Python: ${state.python} (${state.chosenBy})`;
      const answer = state.answer;
      if ('error' in answer && answer.error !== undefined)
        return functions.map((f) => lens(f.line, `no estimate: ${answer.error}`, `${where}\n${answer.error}`));
      const configs = 'configs' in answer ? (answer.configs ?? []) : [];
      return functions.map((f) => {
        const found = configs.find((c) => c.function === f.name);
        if (!found) return lens(f.line, `no estimate: ${f.name} was not found when the file ran`, where);
        const shown = torchtitanPythonLens(found, options);
        return lens(
          f.line,
          shown.title,
          `${shown.detail}\n${where}, torchtitan ${'torchtitan' in answer ? answer.torchtitan : '?'}`,
        );
      });
    },
  };
  return vscode.Disposable.from(
    changed,
    vscode.languages.registerCodeLensProvider({ language: 'python', scheme: 'file' }, provider),
    vscode.workspace.onDidSaveTextDocument((d) => {
      if (probed.delete(d.uri.toString())) changed.fire();
    }),
    vscode.workspace.onDidCloseTextDocument((d) => probed.delete(d.uri.toString())),
    vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration('fsdp.estimator.gpu') && changed.fire()),
    vscode.workspace.onDidGrantWorkspaceTrust(() => changed.fire()),
  );
}
