// "FSDP: Launch FSDP run": pick a run config, validate it (schema, then the runtime's own checks),
// ask when its memory plan exceeds the target's memory (or the SLURM partition's), start it through
// the launch door (start-launch.ts) and open its dashboard.
import * as vscode from 'vscode';
import { checkRunConfigText, loadRunConfig, type ResolvedRunConfig } from '../../core/config/run-config';
import { formatProblem } from '../../core/config/schema-problems';
import { checkHostAlias } from '../../core/remote/remote-command';
import type { RunManifest } from '../../core/protocol/run-manifest';
import { formatBytes } from '../../core/runs/run-history';
import type { LaunchRequest } from '../../runs/launch/launcher';
import type { Launched } from '../../runs/launch/launch-run';
import { LOCAL } from '../../runs/machines/run-machine';
import type { ConfigKind } from '../../core/config/document-kind';
import { findLaunchables, launchableKind } from '../run-configs';
import { launchConfigWithScript, launchSpecFile } from './launch-command';
import { onSlurm, slurmMemoryFits } from './slurm-runs';
import { ensureRuntimeBuilt } from './build-runtime';
import { rangeOfKeyPath, showConfigProblem } from './launch-problems';
import type { StudioContext } from '../studio-context';
import { startLaunch } from './start-launch';

export function registerLaunchRun(studio: StudioContext): vscode.Disposable {
  return vscode.commands.registerCommand('fsdp.launchRun', (uri?: vscode.Uri) => launchRun(studio, uri));
}

async function launchRun(studio: StudioContext, preselected?: vscode.Uri): Promise<void> {
  if (!requireTrust('Launching a run executes the trainer')) return;
  const picked =
    preselected instanceof vscode.Uri
      ? { uri: preselected, kind: await launchableKind(preselected) }
      : await pickLaunchable();
  if (!picked) return;
  const { uri, kind } = picked;
  // A person's own command (a launch spec), or a DeepSpeed / accelerate config launched with its launcher.
  if (kind === 'launch-spec') {
    await launchSpecFile(studio, uri);
    return;
  }
  if (kind === 'deepspeed' || kind === 'accelerate') return launchConfigWithScript(studio, uri, kind);
  const config = await loadForLaunch(studio, uri);
  if (!config) return;
  if (onSlurm(config) ? !(await slurmMemoryFits(studio, config, uri.fsPath)) : !(await memoryFits(studio, config)))
    return;
  await startRun(studio, { configPath: uri.fsPath, config });
}

export function requireTrust(what: string): boolean {
  if (vscode.workspace.isTrusted) return true;
  void vscode.window.showWarningMessage(`${what}: trust this workspace first (Workspaces: Manage Workspace Trust).`);
  return false;
}

/** Reads, checks and resolves a run config; shows what is wrong (file:line key: message) and returns undefined on errors. */
export async function loadForLaunch(studio: StudioContext, uri: vscode.Uri): Promise<ResolvedRunConfig | undefined> {
  const rel = vscode.workspace.asRelativePath(uri);
  const text = Buffer.from(await vscode.workspace.fs.readFile(uri)).toString('utf8');
  const { problems } = checkRunConfigText(text, uri.fsPath);
  const errors = problems.filter((p) => p.severity === 'error');
  if (errors.length) {
    for (const p of errors) studio.output.error(formatProblem(rel, p));
    studio.output.show(true);
    void showConfigProblem(
      uri,
      `${rel} has ${errors.length} error${errors.length > 1 ? 's' : ''}: ${formatProblem(rel, errors[0])}`,
      errors[0].range,
    );
    return undefined;
  }
  const { config } = loadRunConfig(text, uri.fsPath);
  if (!config) return undefined;
  // A run across launch.hosts lives on the first of them.
  if (config.launch.hosts) config.launch.target = config.launch.hosts[0];
  const badHost = [config.launch.target ?? '', ...(config.launch.hosts ?? [])]
    .filter((h) => h !== LOCAL)
    .map(checkHostAlias)
    .find(Boolean);
  if (badHost) {
    void showConfigProblem(
      uri,
      `Cannot launch ${rel}: launch.target: ${badHost}.`,
      rangeOfKeyPath(text, uri.fsPath, 'launch.target'),
    );
    return undefined;
  }
  // An installed extension builds its runtime here on first use (with progress, naming what is missing).
  if (config.launch.target === LOCAL && !(await ensureRuntimeBuilt(studio))) return undefined;
  // The runtime's own checks: relations between keys, what this build can run, the data files.
  const native = studio.runtime.load()?.validateConfig?.(config);
  if (native && !native.ok) {
    for (const e of native.errors) studio.output.error(`${rel} ${e.path}: ${e.message}`);
    studio.output.show(true);
    void showConfigProblem(
      uri,
      `Cannot launch ${rel}: ${native.errors[0]?.path}: ${native.errors[0]?.message}`,
      rangeOfKeyPath(text, uri.fsPath, native.errors[0]?.path ?? ''),
    );
    return undefined;
  }
  if (config.launch.target === LOCAL) {
    const capabilities = await studio.runtime.capabilities();
    if (!capabilities.includes('train') || !studio.trainerCli()) {
      const why = studio.runtime.isBuilt()
        ? 'this build of the native runtime has no trainer yet'
        : 'the native runtime is not built (run npm install in the extension folder)';
      void vscode.window.showErrorMessage(`Cannot launch ${rel}: ${why}. The config is valid.`);
      return undefined;
    }
  }
  return config;
}

/**
 * The memory check before a launch: the runtime's plan for one rank against what one rank has on
 * the target (its GPU, or its share of host memory on the CPU backend). Asks when it does not fit.
 */
async function memoryFits(studio: StudioContext, config: ResolvedRunConfig): Promise<boolean> {
  let planned: number | undefined;
  try {
    planned = (studio.runtime.load()?.memoryPlan?.(config) as { total?: number } | undefined)?.total;
  } catch (e) {
    studio.output.warn(`memory plan unavailable: ${(e as Error).message}`);
  }
  if (planned === undefined || config.launch.target !== LOCAL) {
    // Remote targets: the plan is checked by the runtime on the host when it starts.
    return true;
  }
  const probe = studio.runtime.load()?.probeDevices();
  if (!probe) return true;
  const perNode = config.launch.nproc_per_node ?? 1;
  const capacity = config.launch.device === 'cuda' ? probe.gpus[0]?.memoryBytes : probe.cpu.memoryBytes / perNode;
  const where =
    config.launch.device === 'cuda'
      ? probe.gpus[0]
        ? `${probe.gpus[0].name}`
        : 'no GPU'
      : `this machine's memory shared by ${perNode} rank${perNode > 1 ? 's' : ''}`;
  if (capacity === undefined || planned <= capacity) return true;
  // The safe choice is the default (the first button, taken by Enter); launching is the deliberate one.
  // Not a close affordance: VS Code would move that last and make "Launch anyway" the default.
  const dontLaunch: vscode.MessageItem = { title: "Don't launch" };
  const launch: vscode.MessageItem = { title: 'Launch anyway' };
  const choice = await vscode.window.showWarningMessage(
    `The memory plan needs ${formatBytes(planned)} per rank, more than ${where} has (${formatBytes(capacity)}). Launch anyway?`,
    { modal: true },
    dontLaunch,
    launch,
  );
  return choice === launch;
}

/** Starts (or resumes) a run config's run through the launch door (start-launch.ts). */
export async function startRun(
  studio: StudioContext,
  req: LaunchRequest,
  previous?: RunManifest,
): Promise<Launched | undefined> {
  return startLaunch(studio, { kind: 'native', request: req }, previous ? { previous } : {});
}

async function pickLaunchable(): Promise<{ uri: vscode.Uri; kind: ConfigKind } | undefined> {
  const found = await findLaunchables();
  if (found.length === 0) {
    void vscode.window.showInformationMessage(
      'Nothing to launch in this workspace: a run config is a YAML file with model, data and training sections (e.g. my-run.fsdp.yaml); a launch spec (my-train.fsdp-launch.yaml) names your own command; DeepSpeed and accelerate configs are launched with your script.',
    );
    return undefined;
  }
  const pick = await vscode.window.showQuickPick(
    found.map(({ uri, kind }) => ({
      label: vscode.workspace.asRelativePath(uri),
      description: KIND_TITLES[kind],
      uri,
      configKind: kind,
    })),
    {
      title: 'Launch FSDP run',
      placeHolder: 'Run config, launch spec, or DeepSpeed / accelerate config to launch',
      matchOnDescription: true,
      // A toast, or a run ending beside it and its dashboard taking the focus, must not close it
      // unanswered as it opens (seen in fresh-clone runs: the pick rendered, then hidden); Escape
      // still closes it.
      ignoreFocusOut: true,
    },
  );
  return pick && { uri: pick.uri, kind: pick.configKind };
}

const KIND_TITLES: Record<ConfigKind, string> = {
  'run-config': 'run config',
  'launch-spec': 'your command (launch spec)',
  deepspeed: 'DeepSpeed config: deepspeed + your script',
  accelerate: 'accelerate config: accelerate launch + your script',
  // Checked and estimated, not launched from here (findLaunchables does not list them).
  torchtitan: 'torchtitan job config',
  'hf-training': 'Hugging Face TrainingArguments',
};
