// Launching a run (or resuming one): the run directory, the manifest, the trainer's argument
// vector — through mpirun when the config asks for several processes — and the detached start on
// the target. On an SSH host the runtime and the data are installed first (remote-runtime.ts).
import os from 'node:os';
import path from 'node:path';
import type { ResolvedRunConfig } from '../../core/config/run-config';
import { LAUNCHER_ENV, mpirunArgv, runWorld, worldSizeOf } from './mpirun';
import { newRunId, startingManifest } from '../folder/run-folder';
import type { RunManifest } from '../../core/protocol/run-manifest';
import { RemoteRuntimeInstaller } from '../runtime/remote-runtime';
import { LOCAL, type RunMachine, type StartedRun } from '../machines/run-machine';
import type { SshMachine } from '../machines/ssh-machine';
import { runSshChecked, type SshSettings } from '../machines/ssh';
import { COMPANION_DIR, RemoteCompanionInstaller } from '../runtime/remote-companion';
import { supervisedNativeArgv } from './supervised-native';

export interface LaunchRequest {
  /** The YAML file on this machine. */
  configPath: string;
  /** The same config, resolved (defaults filled, paths absolute on this machine). */
  config: ResolvedRunConfig;
  /** Set for a resume: the run directory to continue (on the target). */
  resumeRunDir?: string;
  /** `key=value` changes to the config file's values, already applied to `config` (continuing a completed run raises training.max_steps). */
  overrides?: string[];
}

export interface LaunchedRun extends StartedRun {
  target: string;
  runDir: string;
  runId: string;
  argv: string[];
}

/** Where the trainer is on this machine: the extension's CLI, run by the editor's own Node. */
export interface LocalTrainer {
  /** dist/cli/fsdp-train.js */
  cli: string;
  /** Node (or Electron run as Node) that runs it. */
  node: string;
  /** fsdp-train-native, where the CLI would not find it by itself (an installed extension's build). */
  native?: string;
}

export interface RemoteContext {
  machine: SshMachine;
  settings: () => SshSettings;
  /** Absolute folder on the host for runtimes, data and runs (fsdp.remote.directory). */
  base: string;
  /** The extension's root: the runtime's sources are copied from there. */
  extensionRoot: string;
}

/**
 * The runtime's argument vector on an SSH host: through mpirun (runs/launch/mpirun.ts, the one place
 * that command is made) when the config asks for several processes. On this machine the CLI
 * fsdp-train starts mpirun itself, so a local run is never wrapped: a stop signal to its process
 * group then reaches fsdp-train, which stops the ranks gracefully (mpirun, sent SIGTERM directly,
 * would abort them without a checkpoint).
 */
export function withMpirun(config: ResolvedRunConfig, argv: string[], exported: string[] = []): string[] {
  const world = runWorld(config);
  if (worldSizeOf(world) <= 1) return argv;
  return mpirunArgv(world, argv, { asRoot: process.getuid?.() === 0, exported });
}

export async function launchLocal(
  machine: RunMachine,
  trainer: LocalTrainer,
  extensionRoot: string,
  req: LaunchRequest,
  previous?: RunManifest,
): Promise<LaunchedRun> {
  const runId = previous?.run_id ?? newRunId(req.config.name);
  const runDir =
    req.resumeRunDir ??
    path.join(req.config.logging.runs_dir ?? path.join(path.dirname(req.configPath), 'runs'), runId);
  // Several processes: fsdp-train runs mpirun itself (see withMpirun). --supervised: the supervisor
  // around it owns the run and writes run.json.
  const trainerArgv = [
    trainer.node,
    trainer.cli,
    req.configPath,
    '--run-dir',
    runDir,
    ...(req.resumeRunDir ? ['--resume', 'auto'] : []),
    ...(req.overrides ?? []).flatMap((o) => ['--set', o]),
    '--supervised',
  ];
  const argv = supervisedNativeArgv(path.join(extensionRoot, COMPANION_DIR), runDir, trainerArgv);
  const manifest = manifestFor(req, runId, argv, LOCAL, previous);
  // ELECTRON_RUN_AS_NODE: in desktop VS Code the editor's executable is Electron; this makes it Node.
  const started = await machine.start({
    runDir,
    manifest,
    argv,
    cwd: path.dirname(req.configPath),
    env: { ELECTRON_RUN_AS_NODE: '1', ...(trainer.native ? { FSDP_TRAIN_NATIVE: trainer.native } : {}) },
  });
  return { ...started, target: LOCAL, runDir, runId, argv };
}

export async function launchRemote(
  remote: RemoteContext,
  req: LaunchRequest,
  progress: (m: string) => void,
  previous?: RunManifest,
): Promise<LaunchedRun> {
  const { machine } = remote;
  const installer = new RemoteRuntimeInstaller(machine.target, remote.settings, remote.extensionRoot);
  const runtime = await installer.ensure(remote.base, progress);
  const runId = previous?.run_id ?? newRunId(req.config.name);
  const runDir = req.resumeRunDir ?? `${remote.base}/runs/${runId}`;
  // The config the host runs: this machine's data files replaced by their copies on the host.
  const config = structuredClone(req.config);
  config.data.train = await installer.ensureFile(remote.base, req.config.data.train, progress);
  if (req.config.data.val) config.data.val = await installer.ensureFile(remote.base, req.config.data.val, progress);
  config.logging.runs_dir = `${remote.base}/runs`;
  const configFile = `${runDir}/config.json`;
  if (!req.resumeRunDir || req.overrides?.length) {
    await runSshChecked(
      machine.target,
      ['mkdir', '-p', '--', runDir, { raw: '&&' }, 'cat', { raw: '>' }, configFile],
      remote.settings(),
      'writing the run config',
      {
        input: `${JSON.stringify(config, null, 2)}\n`,
        timeoutMs: 60_000,
      },
    );
  }
  const runtimeArgv = withMpirun(
    config,
    [runtime.binary, '--config', configFile, '--run-dir', runDir, ...(req.resumeRunDir ? ['--resume', 'auto'] : [])],
    ['OMP_WAIT_POLICY', ...LAUNCHER_ENV],
  );
  // The run's owner on the host: the companion's supervisor around the runtime (or mpirun).
  const companion = await new RemoteCompanionInstaller(machine.target, remote.settings, remote.extensionRoot).ensure(
    remote.base,
    progress,
  );
  const argv = supervisedNativeArgv(companion, runDir, runtimeArgv);
  progress(`starting the run on ${machine.target}…`);
  const manifest = manifestFor({ ...req, config }, runId, argv, machine.target, previous);
  // Passive OpenMP waiting: spinning idle threads slow a run down on a host's shared cores.
  const started = await machine.start({ runDir, manifest, argv, cwd: runDir, env: { OMP_WAIT_POLICY: 'passive' } });
  return { ...started, target: machine.target, runDir, runId, argv };
}

export function manifestFor(
  req: LaunchRequest,
  runId: string,
  argv: string[],
  target: string,
  previous: RunManifest | undefined,
): RunManifest {
  const world = runWorld(req.config);
  return startingManifest(
    {
      runId,
      ...(req.config.name ? { name: req.config.name } : {}),
      config: req.config as unknown as Record<string, unknown>,
      configPath: req.configPath,
      world: { size: worldSizeOf(world), nnodes: world.nnodes, nproc_per_node: world.nprocPerNode },
      host: target === LOCAL ? os.hostname() : target,
      target,
      command: argv,
      maxSteps: req.config.training.max_steps,
    },
    previous,
  );
}
