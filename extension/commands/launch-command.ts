// "Launch FSDP run" on a launch spec (a person's own command: torchrun, accelerate launch,
// deepspeed, python) or on a DeepSpeed / accelerate config (launched with its launcher around a
// script the person picks, through a launch spec written beside the config and reviewed before it
// runs). The spec is checked as the language server checks it, its ranks against its config's, the
// memory estimate of the config it names is shown before the command starts (and asked about when it
// does not fit), and the run opens in its dashboard.
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as vscode from 'vscode';
import { loadLaunchSpec, withSelectedPython } from '../../core/config/launch-spec';
import { launchMemoryNote } from '../../runs/launch/launch-memory';
import { describeLaunch, launchWorldProblem } from '../../runs/launch/launch-world';
import { configFileWorldSize } from '../../core/config/launch-world-size';
import { formatProblem } from '../../core/config/schema-problems';
import { commandForConfig } from '../../core/config/user-command';
import type { RunManifest } from '../../core/protocol/run-manifest';
import type { Launched } from '../../runs/launch/launch-run';
import type { RunRecord } from '../../runs/watch/run-registry';
import type { StudioContext } from '../studio-context';
import { startLaunch } from './start-launch';
import { selectedPython } from '../python-interpreter';

interface Relaunch {
  runDir: string;
  target: string;
  previous: RunManifest | undefined;
}

/** Launches (or, with `relaunch`, starts again in its run folder) the command a launch spec names. */
export async function launchSpecFile(
  studio: StudioContext,
  uri: vscode.Uri,
  relaunch?: Relaunch,
): Promise<Launched | undefined> {
  const rel = vscode.workspace.asRelativePath(uri);
  const text = Buffer.from(await vscode.workspace.fs.readFile(uri)).toString('utf8');
  const { spec: loaded, problems } = loadLaunchSpec(text, uri.fsPath, readLocal);
  for (const p of problems) studio.output[p.severity === 'error' ? 'error' : 'warn'](formatProblem(rel, p));
  if (!loaded) {
    const first = problems.find((p) => p.severity === 'error')!;
    studio.output.show(true);
    void vscode.window.showErrorMessage(`Cannot launch ${rel}: ${formatProblem(rel, first)}`);
    return undefined;
  }
  // A run starts again where it lives, even if the spec's target changed since.
  if (relaunch) loaded.target = relaunch.target;
  // Without python: in the spec, the interpreter selected in the Python extension runs it here.
  const selected =
    loaded.pythonSource || loaded.target !== 'local' ? undefined : await selectedPython(vscode.extensions, uri);
  const spec = withSelectedPython(loaded, selected && 'path' in selected ? selected.path : undefined);
  if (spec.pythonSource) studio.output.info(`${rel}: Python ${spec.python} (from the ${spec.pythonSource})`);
  const world = launchWorldProblem(spec, readLocal);
  if (world) {
    studio.output.error(`${rel}: ${world}`);
    void vscode.window.showErrorMessage(`Cannot launch ${rel}: ${world}`);
    return undefined;
  }
  const gpu = vscode.workspace.getConfiguration('fsdp.estimator').get<string | null>('gpu') ?? undefined;
  const memory = launchMemoryNote(spec, readLocal, { ...(gpu ? { gpu } : {}), hostMemoryBytes: os.totalmem() });
  if (memory?.doesNotFit) {
    const choice = await vscode.window.showWarningMessage(
      `${memory.text}. Launch anyway?`,
      { modal: true },
      'Launch anyway',
    );
    if (choice !== 'Launch anyway') return undefined;
  }
  const request = { specPath: uri.fsPath, spec, ...(relaunch ? { resumeRunDir: relaunch.runDir } : {}) };
  return startLaunch(
    studio,
    { kind: 'command', request },
    { ...(memory ? { note: memory.text } : {}), ...(relaunch?.previous ? { previous: relaunch.previous } : {}) },
  );
}

/** Resume of a command's run: the same spec started again in the same run folder. */
export async function relaunchCommand(
  studio: StudioContext,
  record: RunRecord,
  manifest: RunManifest | undefined,
): Promise<void> {
  const specPath = record.configPath ?? manifest?.config_path;
  if (!specPath || !existsSync(specPath)) {
    void vscode.window.showErrorMessage(
      `Cannot resume ${record.runId}: its launch spec ${specPath ?? '(not recorded)'} is not on this machine.`,
    );
    return;
  }
  await launchSpecFile(studio, vscode.Uri.file(specPath), {
    runDir: record.runDir,
    target: record.target,
    previous: manifest,
  });
}

/**
 * A DeepSpeed or accelerate config: the person picks their training script, a launch spec with the
 * matching launcher is written beside the config (kept, so the launch can be edited and repeated)
 * with the ranks the config implies, opened, and launched once the person has reviewed what will
 * run and said so. Every launch of a spec naming a config refuses ranks that disagree with it, and
 * the launch itself refuses a launcher the target does not have (runs/launch/launcher-check.ts).
 */
export async function launchConfigWithScript(
  studio: StudioContext,
  uri: vscode.Uri,
  kind: 'deepspeed' | 'accelerate',
): Promise<void> {
  const dir = path.dirname(uri.fsPath);
  const stem = path.basename(uri.fsPath).replace(/\.(jsonc?|ya?ml)$/i, '');
  const specUri = vscode.Uri.file(path.join(dir, `${stem}.fsdp-launch.yaml`));
  if (existsSync(specUri.fsPath)) {
    void vscode.window.showInformationMessage(
      `Launching ${vscode.workspace.asRelativePath(specUri)}, the launch spec of ${path.basename(uri.fsPath)} (edit it to change the command).`,
    );
    await launchSpecFile(studio, specUri);
    return;
  }
  const launcher = kind === 'deepspeed' ? 'deepspeed' : 'accelerate launch';
  const scripts = await vscode.workspace.findFiles(
    '**/*.py',
    '{**/node_modules/**,**/.git/**,**/site-packages/**,**/runs/**}',
    500,
  );
  if (scripts.length === 0) {
    void vscode.window.showInformationMessage(
      `Launching ${path.basename(uri.fsPath)} needs your training script (a .py file in the workspace), run by ${launcher}.`,
    );
    return;
  }
  const script = await vscode.window.showQuickPick(
    scripts
      .map((s) => ({ label: vscode.workspace.asRelativePath(s), uri: s }))
      .sort((a, b) => a.label.localeCompare(b.label)),
    {
      title: `Launch ${path.basename(uri.fsPath)} with ${launcher}`,
      placeHolder: `Your training script (${launcher} runs it with this config)`,
      // The second step of a launch: a toast or a run ending beside it must not close it unanswered.
      ignoreFocusOut: true,
    },
  );
  if (!script) return;
  // The ranks the config implies (DeepSpeed's batch identity), else the setting, else 1.
  const implied = configFileWorldSize(uri.fsPath, readLocal)?.size;
  const nproc =
    kind === 'deepspeed'
      ? (implied ?? vscode.workspace.getConfiguration('fsdp.deepspeed', uri).get<number | null>('worldSize') ?? 1)
      : 1;
  const relScript = path.relative(dir, script.uri.fsPath);
  const command = commandForConfig(kind, path.basename(uri.fsPath), relScript, nproc);
  const body = [
    `# FSDP Studio launch spec for ${path.basename(uri.fsPath)}: edit the command (ranks, script arguments), then "FSDP: Launch FSDP run".`,
    `name: ${JSON.stringify(stem)}`,
    `command: ${JSON.stringify(command)}`,
    `config: ${JSON.stringify(path.basename(uri.fsPath))}`,
    '',
  ].join('\n');
  await vscode.workspace.fs.writeFile(specUri, Buffer.from(body));
  await vscode.window.showTextDocument(specUri, { preview: false });
  // Nothing starts before the person has seen what will run: the spec is open for editing.
  const { spec } = loadLaunchSpec(body, specUri.fsPath, readLocal);
  const rel = vscode.workspace.asRelativePath(specUri);
  const what = spec ? describeLaunch(spec, readLocal) : command.join(' ');
  studio.output.info(`wrote ${rel}: ${what}`);
  const choice = await vscode.window.showInformationMessage(
    `Review ${rel} before it runs: ${what}. Edit the command if needed, then Launch.`,
    'Launch',
  );
  if (choice !== 'Launch') return;
  // What the person edited meanwhile is what runs.
  const edited = vscode.workspace.textDocuments.find((d) => d.uri.fsPath === specUri.fsPath);
  if (edited?.isDirty) await edited.save();
  await launchSpecFile(studio, specUri);
}

function readLocal(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}
