// The memory lens of torchtitan 0.3's Python configurations: above each function returning
// Trainer.Config (core/config/torchtitan-python.ts finds them in the text), the per-GPU memory of the
// degrees the config states, on the GPU chosen in the memory panel (fsdp.estimator.gpu). The figures
// need the function run (runs/torchtitan/python-configs.ts runs the companion's probe in the
// workspace's Python), so an untrusted workspace gets a lens that says so and nothing runs. The file
// as saved is what runs: a save runs it again. Clicking a figure opens the memory panel with that
// config's input, as a TOML's lens opens it for the TOML (the panel cannot write a change into Python).
import * as vscode from 'vscode';
import { torchtitanConfigFunctions } from '../core/config/torchtitan-python';
import {
  torchtitanPythonInput,
  torchtitanPythonLens,
  torchtitanPythonOptions,
  type ProbeAnswer,
} from '../core/memory/inputs/from-torchtitan-python';
import { probeScript, probeTorchtitanConfigs, pythonForConfig } from '../runs/torchtitan/python-configs';
import { selectedPython } from './python-interpreter';
import { MemoryEstimatorPanel } from './webviews/memory-estimator-panel';

/** The lens's command: the memory panel for one function of a file, from its probed config. */
export const OPEN_TORCHTITAN_PYTHON_ESTIMATE = 'fsdp.openTorchtitanPythonEstimate';

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
        const lensed = lens(
          f.line,
          shown.title,
          `${shown.detail}\n${where}, torchtitan ${'torchtitan' in answer ? answer.torchtitan : '?'}\n(click for the memory estimator)`,
          shown.estimate ? OPEN_TORCHTITAN_PYTHON_ESTIMATE : '',
        );
        if (shown.estimate && lensed.command) lensed.command.arguments = [document.uri.toString(), f.name];
        return lensed;
      });
    },
  };
  /** The panel for `name`() of the file at `uriText`, from the probe's last answer (what the lens shows). */
  const openEstimate = async (uriText: string, name: string) => {
    const uri = vscode.Uri.parse(uriText);
    const state = probed.get(uri.toString());
    const answer = state && 'answer' in state ? state.answer : undefined;
    const found = answer && 'configs' in answer ? answer.configs?.find((c) => c.function === name) : undefined;
    if (!found?.config) {
      void vscode.window.showErrorMessage(
        `FSDP: ${name}() of ${uri.fsPath} has no estimate (run it again by saving the file).`,
      );
      return;
    }
    const document = await vscode.workspace.openTextDocument(uri);
    const panelGpu = vscode.workspace.getConfiguration('fsdp.estimator').get<string | null>('gpu') ?? undefined;
    const read = torchtitanPythonInput(found.config, torchtitanPythonOptions(document.getText(), panelGpu));
    if ('error' in read) {
      void vscode.window.showErrorMessage(`FSDP: ${name}() of ${uri.fsPath}: ${read.error}`);
      return;
    }
    MemoryEstimatorPanel.show(vscode.Uri.file(extensionRoot), uri, {
      fileName: `${vscode.workspace.asRelativePath(uri)}: ${name}()`,
      kind: 'torchtitan',
      input: read.input,
      notes: [`model: ${read.model}`, ...read.notes],
      readOnly: `${name}() is a torchtitan 0.3 Python config: change it in the function (the panel writes TOML and YAML configs only)`,
    });
  };
  return vscode.Disposable.from(
    changed,
    vscode.commands.registerCommand(OPEN_TORCHTITAN_PYTHON_ESTIMATE, openEstimate),
    vscode.languages.registerCodeLensProvider({ language: 'python', scheme: 'file' }, provider),
    vscode.workspace.onDidSaveTextDocument((d) => {
      if (probed.delete(d.uri.toString())) changed.fire();
    }),
    vscode.workspace.onDidCloseTextDocument((d) => probed.delete(d.uri.toString())),
    vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration('fsdp.estimator.gpu') && changed.fire()),
    vscode.workspace.onDidGrantWorkspaceTrust(() => changed.fire()),
  );
}
