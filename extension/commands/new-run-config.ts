// "FSDP: New run config": asks for a model size, a target and a rank count, writes the commented
// config core/config/new-run-config.ts makes into the workspace, and opens it.
import os from 'node:os';
import * as vscode from 'vscode';
import { GPU_PRESETS } from '../../core/memory/gpu-presets';
import { NEW_CONFIG_MODELS, newRunConfigText } from '../../core/config/new-run-config';
import type { StudioContext } from '../studio-context';

export function registerNewRunConfig(studio: StudioContext): vscode.Disposable {
  return vscode.commands.registerCommand('fsdp.newRunConfig', () => newRunConfig(studio));
}

async function newRunConfig(studio: StudioContext): Promise<void> {
  const title = 'New run config';
  const model = await vscode.window.showQuickPick(
    NEW_CONFIG_MODELS.map((m) => ({ label: m.label, description: `${m.n_layers} layers × ${m.d_model}`, id: m.id })),
    { title, placeHolder: 'Model size' },
  );
  if (!model) return;
  const target = await vscode.window.showQuickPick(
    [
      { label: 'CPU (this machine)', description: 'the native CPU backend', id: 'cpu' },
      ...GPU_PRESETS.map((g) => ({
        label: g.name,
        description: `${(g.memoryBytes / 2 ** 30).toFixed(1)} GiB`,
        id: g.id,
      })),
    ],
    { title, placeHolder: 'Train on' },
  );
  if (!target) return;
  const ranks = await vscode.window.showQuickPick(
    ['1', '2', '4', '8'].map((n) => ({
      label: n,
      description: target.id === 'cpu' ? 'ranks on this machine' : `${target.label} GPUs`,
    })),
    { title, placeHolder: 'Processes per node' },
  );
  if (!ranks) return;
  const text = newRunConfigText({
    model: model.id,
    target: target.id,
    ranks: Number(ranks.label),
    hostMemoryBytes: os.totalmem(),
  });
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
  if (!folder) {
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument({ language: 'yaml', content: text }));
    return;
  }
  const uri = await freeName(folder, `${model.id}-${target.id.toLowerCase()}`);
  await vscode.workspace.fs.writeFile(uri, Buffer.from(text, 'utf8'));
  studio.output.info(`wrote ${vscode.workspace.asRelativePath(uri)}`);
  await vscode.window.showTextDocument(uri);
}

/** `<base>.fsdp.yaml`, or `<base>-2.fsdp.yaml` and so on when taken. */
async function freeName(folder: vscode.Uri, base: string): Promise<vscode.Uri> {
  for (let i = 1; ; i++) {
    const uri = vscode.Uri.joinPath(folder, `${base}${i > 1 ? `-${i}` : ''}.fsdp.yaml`);
    try {
      await vscode.workspace.fs.stat(uri);
    } catch {
      return uri;
    }
  }
}
