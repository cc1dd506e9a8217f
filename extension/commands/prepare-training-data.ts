// "FSDP: Prepare training data…" (the command palette, or the explorer's menu on files and folders):
// a person's own text into token files with their model's Hugging Face tokenizer. It runs
// `fsdp-train prepare` (cli/train/prepare-command.ts, bundled as dist/cli/fsdp-train.js) in a process
// of its own with a cancellable progress notification (Cancel is Ctrl+C: nothing half-written is
// left), then offers a run config that trains on the result.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { preparedRunConfigText } from '../../core/data/prepare/prepared-run-config';
import type { PrepareProgress, PrepareStats } from '../../core/data/prepare/prepare-data';
import type { StudioContext } from '../studio-context';

export interface PrepareTrainingDataArgs {
  inputs: string[];
  tokenizer: string;
  out: string;
}

export function registerPrepareTrainingData(studio: StudioContext): vscode.Disposable {
  return vscode.commands.registerCommand('fsdp.prepareTrainingData', (first?: unknown, selected?: vscode.Uri[]) =>
    prepareTrainingData(studio, first, selected),
  );
}

/** From the explorer: (the clicked file, the selection); from a test: PrepareTrainingDataArgs; else asks. */
async function prepareTrainingData(studio: StudioContext, first?: unknown, selected?: vscode.Uri[]): Promise<void> {
  if (!vscode.workspace.isTrusted) {
    void vscode.window.showWarningMessage('Preparing training data runs a program: trust this workspace first.');
    return;
  }
  const clicked = first instanceof vscode.Uri ? first : undefined;
  const given = first && !clicked ? (first as PrepareTrainingDataArgs) : undefined;
  const args = given ?? (await ask(clicked, selected));
  if (!args) return;
  const stats = await prepare(studio, args);
  if (stats) await offerRunConfig(args.out, stats);
}

/** The inputs (the explorer's selection, else chosen), the tokenizer's folder and the output folder. */
async function ask(clicked?: vscode.Uri, selected?: vscode.Uri[]): Promise<PrepareTrainingDataArgs | undefined> {
  const title = 'Prepare training data';
  const picked =
    selected?.length || clicked
      ? selected?.length
        ? selected
        : [clicked as vscode.Uri]
      : await vscode.window.showOpenDialog({
          title: `${title}: your text (.txt, .jsonl, or folders of them)`,
          canSelectFiles: true,
          canSelectFolders: true,
          canSelectMany: true,
          openLabel: 'Use this text',
        });
  if (!picked?.length) return undefined;
  const tokenizer = await vscode.window.showOpenDialog({
    title: `${title}: your model's folder (with tokenizer.json), or the tokenizer.json`,
    canSelectFiles: true,
    canSelectFolders: true,
    canSelectMany: false,
    openLabel: 'Use this tokenizer',
  });
  if (!tokenizer?.length) return undefined;
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? path.dirname(picked[0].fsPath);
  const suggested = path.join(folder, 'data', path.basename(picked[0].fsPath).replace(/\.[^.]*$/, '') || 'text');
  const out = await vscode.window.showInputBox({
    title: `${title}: where train.tok and val.tok go`,
    value: suggested,
    validateInput: (v) => (v.trim() ? undefined : 'a folder is needed'),
  });
  if (!out) return undefined;
  return { inputs: picked.map((u) => u.fsPath), tokenizer: tokenizer[0].fsPath, out: out.trim() };
}

async function prepare(studio: StudioContext, args: PrepareTrainingDataArgs): Promise<PrepareStats | undefined> {
  const cli = path.join(studio.extension.extensionPath, 'dist', 'cli', 'fsdp-train.js');
  const argv = [
    '-e',
    // The bundle exports main(argv); run it as the bin shim does, its exit code ours.
    'require(process.argv[1]).main(process.argv.slice(2)).then((c) => { process.exitCode = c; })',
    cli,
    'prepare',
    '--progress',
    'json',
    '--tokenizer',
    args.tokenizer,
    '--out',
    args.out,
    ...args.inputs,
  ];
  try {
    await vscode.window.withProgress(
      {
        location: vscode.ProgressLocation.Notification,
        title: `Preparing training data in ${vscode.workspace.asRelativePath(args.out)}`,
        cancellable: true,
      },
      (progress, token) =>
        new Promise<void>((resolve, reject) => {
          const child = spawn(process.execPath, argv, {
            env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' },
            stdio: ['ignore', 'pipe', 'pipe'],
          });
          token.onCancellationRequested(() => child.kill('SIGINT'));
          let said = '';
          let shown = 0;
          let partial = '';
          child.stdout.on('data', (d: Buffer) => (said += d.toString()));
          child.stderr.on('data', (d: Buffer) => {
            const lines = (partial + d.toString()).split('\n');
            partial = lines.pop() ?? '';
            for (const line of lines) {
              const p = progressOf(line);
              if (!p) {
                said += `${line}\n`;
                continue;
              }
              const share = p.bytesTotal > 0 ? (100 * p.bytesRead) / p.bytesTotal : 100;
              progress.report({
                increment: share - shown,
                message: `${share.toFixed(0)}% · ${p.tokens.toLocaleString('en-US')} tokens`,
              });
              shown = share;
            }
          });
          child.on('error', reject);
          child.on('close', (code) => {
            studio.output.info(`fsdp-train prepare: ${said.trim()}`);
            if (code === 0) resolve();
            else if (token.isCancellationRequested) reject(new vscode.CancellationError());
            else reject(new Error(lastWords(said) || `exit code ${code}`));
          });
        }),
    );
  } catch (e) {
    if (e instanceof vscode.CancellationError) {
      void vscode.window.showInformationMessage('Preparing training data was cancelled; nothing was written.');
    } else {
      void vscode.window.showErrorMessage(`Preparing training data failed: ${(e as Error).message}`);
    }
    return undefined;
  }
  const statsFile = path.join(args.out, 'stats.json');
  return existsSync(statsFile) ? (JSON.parse(readFileSync(statsFile, 'utf8')) as PrepareStats) : undefined;
}

async function offerRunConfig(out: string, stats: PrepareStats): Promise<void> {
  const create = 'Create a run config';
  const answer = await vscode.window.showInformationMessage(
    `Training data ready: ${stats.train.tokens.toLocaleString('en-US')} training tokens, ` +
      `${stats.val.tokens.toLocaleString('en-US')} validation tokens (${stats.tokenizer}, vocabulary ${stats.vocab_size}).`,
    create,
  );
  if (answer !== create) return;
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? path.dirname(out);
  let file = path.join(folder, `${path.basename(out)}.yaml`);
  for (let i = 2; existsSync(file); i++) file = path.join(folder, `${path.basename(out)}-${i}.yaml`);
  writeFileSync(file, preparedRunConfigText(stats, out, path.dirname(file)), { flag: 'wx' });
  await vscode.window.showTextDocument(vscode.Uri.file(file));
}

function progressOf(line: string): PrepareProgress | undefined {
  if (!line.startsWith('{"progress"')) return undefined;
  try {
    return (JSON.parse(line) as { progress: PrepareProgress }).progress;
  } catch {
    return undefined;
  }
}

/** The CLI's own words on what went wrong: its last line that says something. */
function lastWords(text: string): string {
  const lines = text
    .trim()
    .split('\n')
    .filter((l) => l.trim() && !l.startsWith('usage:'));
  return (lines.find((l) => l.startsWith('fsdp-train prepare:')) ?? lines.at(-1) ?? '').replace(
    /^fsdp-train prepare: /,
    '',
  );
}
