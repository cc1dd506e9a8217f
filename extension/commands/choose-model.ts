// "FSDP: Choose the model of a config", run from the inline hint "which model? — choose" on a
// DeepSpeed, accelerate or TrainingArguments config that names no model: a picker of the presets
// (the family the config's wrap class names first), the models in the local Hugging Face cache,
// the workspace's model folders (a config.json with a model_type) and a typed id or path. The choice
// is kept per file in the workspace's state, never written into the file (a DeepSpeed JSON stays
// plain JSON every loader reads), and sent to the language server (core/memory/model-choice.ts).
import { readdirSync } from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { hfCacheDir } from '../../core/memory/inputs/hf-model';
import { type ChooseModelArgs, type ModelChoicesParams } from '../../core/memory/model-choice';
import { MODEL_PRESETS } from '../../core/memory/model-presets';
import { formatParameters } from '../../core/memory/summary';
import { parameterCounts } from '../../core/memory/model-shape';

/** The workspace-state key of the choices: config document URI → model. */
const STATE_KEY = 'fsdp.modelChoices';
const EXCLUDE = '{**/node_modules/**,**/runs/**,**/.git/**,**/dist/**,**/site-packages/**}';

type Pick = vscode.QuickPickItem & { ref?: string; typed?: boolean };

/** The choices kept for this workspace. */
export function modelChoices(state: vscode.Memento): Record<string, string> {
  return state.get<Record<string, string>>(STATE_KEY) ?? {};
}

export function registerChooseModel(
  state: vscode.Memento,
  send: (params: ModelChoicesParams) => Promise<void>,
): vscode.Disposable {
  return vscode.commands.registerCommand('fsdp.chooseModel', async (args?: ChooseModelArgs) => {
    // The document's URI as the language server named it in the hint (the key it looks choices up by).
    const key = args?.uri ?? vscode.window.activeTextEditor?.document.uri.toString();
    if (!key) return;
    const chosen = await pickModel(path.basename(vscode.Uri.parse(key).path), args);
    if (!chosen) return;
    const choices = { ...modelChoices(state), [key]: chosen };
    await state.update(STATE_KEY, choices);
    await send({ choices });
  });
}

async function pickModel(name: string, args: ChooseModelArgs | undefined): Promise<string | undefined> {
  const family = new Set(args?.family?.presets ?? []);
  const preset = (p: (typeof MODEL_PRESETS)[number]): Pick => ({
    label: p.shape.name,
    description: `${p.id} · ${formatParameters(parameterCounts(p.shape).total)} parameters${family.has(p.id) ? ` · a ${args!.family!.name}, as the wrap class says` : ''}`,
    detail: p.hfIds.join(', '),
    ref: p.id,
  });
  const items: Pick[] = [
    { label: 'Presets', kind: vscode.QuickPickItemKind.Separator },
    ...MODEL_PRESETS.filter((p) => family.has(p.id)).map(preset),
    ...MODEL_PRESETS.filter((p) => !family.has(p.id)).map(preset),
  ];
  const cached = cachedModelIds();
  if (cached.length)
    items.push(
      { label: 'Hugging Face cache', kind: vscode.QuickPickItemKind.Separator },
      ...cached.map((id): Pick => ({ label: id, description: 'in the local Hugging Face cache', ref: id })),
    );
  const folders = await modelFolders();
  if (folders.length)
    items.push(
      { label: 'Folders', kind: vscode.QuickPickItemKind.Separator },
      ...folders.map((f): Pick => ({ label: vscode.workspace.asRelativePath(f), description: 'config.json', ref: f })),
    );
  items.push(
    { label: '', kind: vscode.QuickPickItemKind.Separator },
    { label: 'Another Hugging Face id or folder…', typed: true },
  );
  const picked = await vscode.window.showQuickPick(items, {
    title: `Which model does ${name} train?`,
    placeHolder: args?.why ? `${args.why} — kept for this file in the workspace, not written into it` : undefined,
    matchOnDescription: true,
    matchOnDetail: true,
  });
  if (!picked) return undefined;
  if (!picked.typed) return picked.ref;
  const typed = await vscode.window.showInputBox({
    title: `The model ${name} trains`,
    prompt: 'A Hugging Face id (meta-llama/Llama-2-7b-hf), or a folder with its config.json',
  });
  return typed?.trim() || undefined;
}

/** ORG/NAME of every model in the local Hugging Face cache (models--ORG--NAME folders). */
function cachedModelIds(): string[] {
  try {
    return readdirSync(hfCacheDir())
      .filter((d) => d.startsWith('models--'))
      .map((d) => d.slice('models--'.length).replace('--', '/'))
      .sort();
  } catch {
    return [];
  }
}

/** Folders of the workspace holding a model's config.json (one with a model_type). */
async function modelFolders(): Promise<string[]> {
  const found = await vscode.workspace.findFiles('**/config.json', EXCLUDE, 200);
  const out: string[] = [];
  for (const f of found) {
    const text = Buffer.from(await vscode.workspace.fs.readFile(f)).toString('utf8');
    if (/"model_type"\s*:/.test(text)) out.push(path.dirname(f.fsPath));
  }
  return out.sort();
}
