// Finds the run configs of the workspace: `*.fsdp.yaml` files, and YAML files whose top level has
// the run config's required sections (model, data, training); and everything else "Launch FSDP
// run" launches: launch specs for a person's own command, DeepSpeed and accelerate configs.
import * as vscode from 'vscode';
import { parse } from 'yaml';
import { recogniseConfig, type ConfigKind } from '../core/config/document-kind';

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

/** Run configs, launch specs, DeepSpeed and accelerate configs of the workspace, with their kind. */
export async function findLaunchables(
  token?: vscode.CancellationToken,
): Promise<Array<{ uri: vscode.Uri; kind: ConfigKind }>> {
  const candidates = await vscode.workspace.findFiles('**/*.{yaml,yml,json}', EXCLUDE, 1000, token);
  const found: Array<{ uri: vscode.Uri; kind: ConfigKind }> = [];
  for (const uri of candidates) {
    const kind = await launchableKind(uri);
    if (kind) found.push({ uri, kind });
  }
  const order: ConfigKind[] = ['run-config', 'launch-spec', 'deepspeed', 'accelerate'];
  return found.sort((a, b) => order.indexOf(a.kind) - order.indexOf(b.kind) || a.uri.path.localeCompare(b.uri.path));
}

/** What "Launch FSDP run" would do with a file: its kind, undefined when it launches nothing. */
export async function launchableKind(uri: vscode.Uri): Promise<ConfigKind | undefined> {
  let text: string;
  try {
    text = Buffer.from(await vscode.workspace.fs.readFile(uri)).toString('utf8');
  } catch {
    return undefined;
  }
  const associations =
    vscode.workspace.getConfiguration('fsdp.files', uri).get<Record<string, ConfigKind | 'none'>>('associations') ?? {};
  return recogniseConfig(uri.fsPath, text, associations) ?? (isRunConfigText(text) ? 'run-config' : undefined);
}
