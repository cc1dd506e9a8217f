// Finds the run configs of the workspace: `*.fsdp.yaml` files, and YAML files whose top level has
// the run config's required sections (model, data, training).
import * as vscode from 'vscode';
import { parse } from 'yaml';

const EXCLUDE = '{**/node_modules/**,**/runs/**,**/.git/**}';

export async function findRunConfigs(token?: vscode.CancellationToken): Promise<vscode.Uri[]> {
  const candidates = await vscode.workspace.findFiles('**/*.{yaml,yml}', EXCLUDE, 500, token);
  const found: vscode.Uri[] = [];
  for (const uri of candidates) {
    if (uri.path.endsWith('.fsdp.yaml') || (await looksLikeRunConfig(uri))) found.push(uri);
  }
  return found.sort((a, b) => a.path.localeCompare(b.path));
}

export async function looksLikeRunConfig(uri: vscode.Uri): Promise<boolean> {
  try {
    const text = Buffer.from(await vscode.workspace.fs.readFile(uri)).toString('utf8');
    return isRunConfigText(text);
  } catch {
    return false;
  }
}

export function isRunConfigText(text: string): boolean {
  try {
    const value = parse(text) as unknown;
    return !!value && typeof value === 'object' && ['model', 'data', 'training'].every((k) => k in (value as object));
  } catch {
    return false;
  }
}
