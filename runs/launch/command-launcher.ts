// Launching a person's own training command from a launch spec, exactly as native runs are
// launched: a run folder with run.json (runs/folder/run-folder.ts, kind "command"), the detached
// start in a session of its own on this machine or an SSH host, stdout/stderr in the run folder.
// What runs is the companion's supervisor around the command (python/fsdp_studio/supervise.py): it
// keeps run.json current, starts the ranks of a plain python command with the environment
// rendezvous, and puts the companion on the command's PYTHONPATH.
import os from 'node:os';
import path from 'node:path';
import type { ResolvedLaunchSpec } from '../../core/config/launch-spec';
import { newRunId, startingManifest } from '../folder/run-folder';
import type { RunManifest } from '../../core/protocol/run-manifest';
import type { LaunchedRun, RemoteContext } from './launcher';
import { COMPANION_DIR, RemoteCompanionInstaller, supervisorPath } from '../runtime/remote-companion';
import { LOCAL, type RunMachine } from '../machines/run-machine';
import { localLoginHost, sshLoginHost } from '../machines/login-host';
import { launcherProblem } from './launcher-check';

export interface CommandLaunchRequest {
  /** The launch spec on this machine. */
  specPath: string;
  spec: ResolvedLaunchSpec;
  /** Set for a relaunch in an existing run folder (on the target). */
  resumeRunDir?: string;
}

/** The argument vector that runs the command under the supervisor. */
export function supervisedArgv(spec: ResolvedLaunchSpec, companionRoot: string, runDir: string): string[] {
  return [
    spec.python,
    supervisorPath(companionRoot),
    '--run-dir',
    runDir,
    ...(spec.nproc > 1 ? ['--nproc', String(spec.nproc)] : []),
    ...usePython(spec),
    '--',
    ...spec.command.argv,
  ];
}

/** A chosen Python (the spec's python:, the Python extension's) runs the command's bare `python` word and comes first on its PATH. */
export function usePython(spec: ResolvedLaunchSpec): string[] {
  return spec.pythonSource ? ['--use-this-python'] : [];
}

export async function launchCommandLocal(
  machine: RunMachine,
  extensionRoot: string,
  req: CommandLaunchRequest,
  previous?: RunManifest,
): Promise<LaunchedRun> {
  const { spec } = req;
  const missing = await launcherProblem(localLoginHost(), spec);
  if (missing) throw new Error(missing);
  const runId = previous?.run_id ?? newRunId(spec.name);
  const runDir = req.resumeRunDir ?? path.join(spec.runsDir, runId);
  const argv = supervisedArgv(spec, path.join(extensionRoot, COMPANION_DIR), runDir);
  const manifest = manifestFor(req, runId, argv, LOCAL, os.hostname(), spec.tensorboard, previous);
  const started = await machine.start({ runDir, manifest, argv, cwd: spec.cwd, env: spec.env });
  return { ...started, target: LOCAL, runDir, runId, argv };
}

export async function launchCommandRemote(
  remote: RemoteContext,
  req: CommandLaunchRequest,
  progress: (m: string) => void,
  previous?: RunManifest,
): Promise<LaunchedRun> {
  const { machine } = remote;
  const { spec } = req;
  const missing = await launcherProblem(sshLoginHost(machine.target, remote.settings), spec);
  if (missing) throw new Error(missing);
  const companion = await new RemoteCompanionInstaller(machine.target, remote.settings, remote.extensionRoot).ensure(
    remote.base,
    progress,
  );
  const runId = previous?.run_id ?? newRunId(spec.name);
  const runDir = req.resumeRunDir ?? `${remote.base}/runs/${runId}`;
  // Remote paths are stored absolute (run.json names them for every later reader).
  const cwd = await machine.absolute(spec.cwd);
  const tensorboard = spec.tensorboard ? await machine.absolute(spec.tensorboard) : undefined;
  const argv = supervisedArgv(spec, companion, runDir);
  progress(`starting ${spec.command.argv[0]} on ${machine.target}…`);
  const manifest = manifestFor(
    { ...req, spec: { ...spec, cwd } },
    runId,
    argv,
    machine.target,
    machine.target,
    tensorboard,
    previous,
  );
  const started = await machine.start({ runDir, manifest, argv, cwd, env: spec.env });
  return { ...started, target: machine.target, runDir, runId, argv };
}

export function manifestFor(
  req: CommandLaunchRequest,
  runId: string,
  argv: string[],
  target: string,
  host: string,
  tensorboard: string | undefined,
  previous: RunManifest | undefined,
): RunManifest {
  const { spec } = req;
  return startingManifest(
    {
      runId,
      name: spec.name,
      // What the run was launched with, for the dashboard and for a relaunch.
      config: {
        command: spec.command.argv,
        launcher: spec.command.launcher,
        cwd: spec.cwd,
        env: spec.env,
        // The spec's own nproc_per_node starts copies of a plain python command; a launcher's ranks are its options'.
        ...(spec.command.launcher === 'python' ? { nproc_per_node: spec.nproc } : {}),
        target: spec.target,
        ...(spec.config ? { config: spec.config } : {}),
        ...(spec.metricsPatterns ? { metrics: { pattern: spec.metricsPatterns } } : {}),
      },
      configPath: req.specPath,
      world: manifestWorld(spec),
      host,
      target,
      command: argv,
      kind: 'command',
      ...(tensorboard ? { logs: { tensorboard } } : {}),
    },
    previous,
  );
}

/**
 * The ranks the command starts, as run.json's world: the launcher's options (torchrun --nproc_per_node
 * and --nnodes, accelerate launch --num_processes, deepspeed --num_gpus or its resources), or the
 * spec's nproc_per_node copies of a plain python command. Where the command does not say (deepspeed
 * on every GPU of the host), counted "launcher" with size 1 until the supervisor counts the ranks
 * that start.
 */
export function manifestWorld(spec: ResolvedLaunchSpec): RunManifest['world'] {
  const c = spec.command;
  const perNode = c.launcher === 'python' ? spec.nproc : c.nprocPerNode;
  if (spec.worldSize === undefined) return { size: 1, counted: 'launcher' };
  return {
    size: spec.worldSize,
    ...(perNode !== undefined && perNode > 1 ? { nproc_per_node: perNode } : {}),
    ...(c.launcher !== 'python' && c.nnodes !== undefined && c.nnodes > 1 ? { nnodes: c.nnodes } : {}),
  };
}
