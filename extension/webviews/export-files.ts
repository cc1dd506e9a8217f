// Saving what a panel exports (a run's metrics as CSV, a chart as PNG): the editor's own save
// dialog, so the webview never touches files and its CSP stays strict.
import * as vscode from 'vscode';
import { writeRegularFileSync } from '../../core/protocol/regular-file';
import type { RunRecord } from '../../runs/watch/run-registry';

const FILTERS: Record<string, string[]> = { CSV: ['csv'], PNG: ['png'] };

/** Asks where to save `bytes` (proposing `fileName` in the run's folder, or the workspace for remote runs) and writes it. */
export async function saveExport(
  record: RunRecord | undefined,
  fileName: string,
  kind: keyof typeof FILTERS,
  bytes: Uint8Array,
): Promise<vscode.Uri | undefined> {
  const folder =
    record?.target === 'local' ? vscode.Uri.file(record.runDir) : vscode.workspace.workspaceFolders?.[0]?.uri;
  const uri = await vscode.window.showSaveDialog({
    title: `Save ${kind}`,
    saveLabel: 'Save',
    filters: { [kind]: FILTERS[kind] },
    ...(folder ? { defaultUri: vscode.Uri.joinPath(folder, fileName) } : {}),
  });
  if (!uri) return undefined;
  try {
    // A file on this machine (the run's folder is proposed) is not written through a link put there.
    if (uri.scheme === 'file') writeRegularFileSync(uri.fsPath, bytes);
    else await vscode.workspace.fs.writeFile(uri, bytes);
  } catch (e) {
    void vscode.window.showErrorMessage(`Could not save ${uri.fsPath}: ${(e as Error).message}`);
    return undefined;
  }
  void vscode.window
    .showInformationMessage(`Saved ${vscode.workspace.asRelativePath(uri)} (${formatSize(bytes.length)}).`, 'Open')
    .then((pick) => {
      if (pick) void vscode.commands.executeCommand('vscode.open', uri);
    });
  return uri;
}

function formatSize(bytes: number): string {
  return bytes >= 1 << 20
    ? `${(bytes / (1 << 20)).toFixed(1)} MiB`
    : bytes >= 1024
      ? `${(bytes / 1024).toFixed(0)} KiB`
      : `${bytes} B`;
}

/** A name safe as a file name: letters, digits, dot, dash and underscore. */
export function fileStem(name: string): string {
  return name.replace(/[^\w.-]+/g, '-').replace(/^-+|-+$/g, '') || 'run';
}

/** The PNG bytes of a `data:image/png;base64,` URL from a webview, or undefined for anything else. */
export function pngFromDataUrl(url: string): Buffer | undefined {
  const prefix = 'data:image/png;base64,';
  if (typeof url !== 'string' || !url.startsWith(prefix)) return undefined;
  const bytes = Buffer.from(url.slice(prefix.length), 'base64');
  // The PNG signature: whatever else a webview sends is not written.
  return bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) ? bytes : undefined;
}
