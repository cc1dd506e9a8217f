// "Prepare the sample data" (the quick fix on a run config whose fortunes-*.tok file is missing):
// runs samples/prepare-data.ts (bundled as dist/prepare-data.js) in a process of its own, so the
// tokenizer's seconds of work never block the editor, with a progress notification; it reads
// Debian's fortunes corpus, and says which package to install when it is not there.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import type { StudioContext } from '../studio-context';

const CORPUS = '/usr/share/games/fortunes';

export interface PrepareSampleDataArgs {
  /** Folder the token files go to. */
  out: string;
  tokenizer: 'byte' | 'gpt2';
}

export function registerPrepareSampleData(studio: StudioContext): vscode.Disposable {
  return vscode.commands.registerCommand('fsdp.prepareSampleData', async (args?: PrepareSampleDataArgs) => {
    if (!vscode.workspace.isTrusted) {
      void vscode.window.showWarningMessage('Preparing the sample data runs a program: trust this workspace first.');
      return;
    }
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const out = args?.out ?? (folder ? path.join(folder, 'data') : undefined);
    if (!out) return;
    const tokenizer = args?.tokenizer === 'gpt2' ? 'gpt2' : 'byte';
    if (!existsSync(CORPUS)) {
      void vscode.window.showErrorMessage(
        `The sample data is made from Debian's fortunes corpus, which is not installed (${CORPUS} is missing): install the package "fortunes" (sudo apt-get install fortunes), then try again.`,
      );
      return;
    }
    const script = path.join(studio.extension.extensionPath, 'dist', 'prepare-data.js');
    try {
      const said = await vscode.window.withProgress(
        {
          location: vscode.ProgressLocation.Notification,
          title: `Preparing the sample data (${tokenizer} tokenizer) in ${vscode.workspace.asRelativePath(out)}…`,
        },
        () =>
          new Promise<string>((resolve, reject) => {
            execFile(
              process.execPath,
              [script, '--tokenizer', tokenizer, '--out', out, '--corpus', CORPUS],
              { env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' }, timeout: 10 * 60_000 },
              (e, stdout, stderr) => {
                if (e) reject(new Error(stderr.trim() || e.message));
                else resolve(stdout.trim());
              },
            );
          }),
      );
      studio.output.info(`prepare-data: ${said}`);
      void vscode.window.showInformationMessage(`Sample data ready: ${said}.`);
    } catch (e) {
      void vscode.window.showErrorMessage(`Preparing the sample data failed: ${(e as Error).message}`);
    }
  });
}
