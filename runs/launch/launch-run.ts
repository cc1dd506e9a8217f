// The one door every launch goes through: launchRun(spec, target). What runs — the native runtime
// from a run config, or a person's own command from a launch spec — times where it runs — this
// machine, an SSH host, several SSH hosts (mpirun across them), a SLURM cluster from a login host.
// Each pair is a small strategy in the file that knows it (launcher.ts, command-launcher.ts,
// hosts-launch.ts, slurm/slurm-launch.ts, slurm/slurm-command-launch.ts); this file only picks it.
// A resume goes through the same door, with the run's previous run.json.
import path from 'node:path';
import type { ResolvedLaunchSpec } from '../../core/config/launch-spec';
import type { RunManifest } from '../../core/protocol/run-manifest';
import { localLoginHost, sshLoginHost, type LoginHost } from '../machines/login-host';
import { LOCAL, type RunMachine } from '../machines/run-machine';
import type { SshMachine } from '../machines/ssh-machine';
import type { SshSettings } from '../machines/ssh';
import { COMPANION_DIR, RemoteCompanionInstaller } from '../runtime/remote-companion';
import type { SlurmCluster } from '../slurm/slurm-cluster';
import { launchCommandOnSlurm, type CommandPlacement } from '../slurm/slurm-command-launch';
import { launchSlurm, placeHere, placeOverSsh, type LaunchedSlurmRun } from '../slurm/slurm-launch';
import { launchCommandLocal, launchCommandRemote, type CommandLaunchRequest } from './command-launcher';
import { launchHosts } from './hosts-launch';
import { supervisorPythonProblem } from './launcher-check';
import { SUPERVISOR_PYTHON } from './supervised-native';
import { untilOwned } from './until-owned';
import {
  launchLocal,
  launchRemote,
  type LaunchedRun,
  type LaunchRequest,
  type LocalTrainer,
  type RemoteContext,
} from './launcher';

/** What runs. */
export type RunSpec =
  /** The native runtime, from a run config. */
  | { kind: 'native'; request: LaunchRequest }
  /** A person's own training command, from a launch spec. */
  | { kind: 'command'; request: CommandLaunchRequest };

/** Where it runs. */
export type LaunchTarget =
  | { kind: 'local' }
  | { kind: 'ssh'; host: string }
  /** One job across these SSH hosts, started by mpirun from the first (launch.hosts). */
  | { kind: 'hosts'; hosts: string[] }
  /** A SLURM job submitted from this login host ("local", or an SSH alias). */
  | { kind: 'slurm'; loginHost: string };

/** A started run: a detached process group, or a SLURM job. */
export type Launched = LaunchedRun | LaunchedSlurmRun;

/** What the launching side brings: how it reaches machines, and where the runtime and companion come from. */
export interface LaunchEnvironment {
  /** The machine of a target ("local" or an SSH alias): the one that will watch the run. */
  machine(target: string): RunMachine;
  sshMachine(alias: string): SshMachine;
  cluster(loginHost: string): SlurmCluster;
  sshSettings(): SshSettings;
  /** fsdp.remote.directory as configured (a leading ~/ allowed): runtimes, data and runs on hosts. */
  remoteBase: string;
  /** The extension's (or the repository's) root: the runtime's sources and the companion come from there. */
  extensionRoot: string;
  /** fsdp-train on this machine, for native runs here. */
  localTrainer?: LocalTrainer;
  /** fsdp-train-native on this machine, for a SLURM job submitted from here. */
  localNative?: string;
}

export interface LaunchOptions {
  progress?: (message: string) => void;
  /** The run's run.json, for a resume or relaunch in its folder (spec.request.resumeRunDir). */
  previous?: RunManifest;
}

/** Where a run goes: its config or launch spec says; a run that was a SLURM job stays one. */
export function launchTargetOf(spec: RunSpec, previous?: RunManifest): LaunchTarget {
  if (spec.kind === 'native') {
    const launch = spec.request.config.launch;
    const where = launch.target ?? LOCAL;
    if (launch.slurm || previous?.slurm) return { kind: 'slurm', loginHost: where };
    if (launch.hosts) return { kind: 'hosts', hosts: launch.hosts };
    return where === LOCAL ? { kind: 'local' } : { kind: 'ssh', host: where };
  }
  const s = spec.request.spec;
  if (s.slurm || previous?.slurm) return { kind: 'slurm', loginHost: s.target };
  return s.target === LOCAL ? { kind: 'local' } : { kind: 'ssh', host: s.target };
}

export async function launchRun(
  spec: RunSpec,
  target: LaunchTarget,
  env: LaunchEnvironment,
  opts: LaunchOptions = {},
): Promise<Launched> {
  const progress = opts.progress ?? (() => undefined);
  if (spec.kind === 'native') {
    // A command's launch asks its supervisor's Python in launcherProblem; a native run's is the host's python3.
    const problem = await supervisorPythonProblem(nativeOwnerHost(target, env), SUPERVISOR_PYTHON);
    if (problem) throw new Error(problem);
  }
  const launched =
    spec.kind === 'native'
      ? await NATIVE[target.kind](spec.request, target as never, env, progress, opts.previous)
      : await COMMAND[target.kind](spec.request, target as never, env, progress, opts.previous);
  // A detached start (not a SLURM job): its owner writes run.json first thing.
  if ('pgid' in launched) await untilOwned(env.machine(launched.target), launched);
  return launched;
}

type Strategies<R> = {
  [K in LaunchTarget['kind']]: (
    request: R,
    target: Extract<LaunchTarget, { kind: K }>,
    env: LaunchEnvironment,
    progress: (m: string) => void,
    previous?: RunManifest,
  ) => Promise<Launched>;
};

const NATIVE: Strategies<LaunchRequest> = {
  local: (req, _target, env, _progress, previous) =>
    launchLocal(
      env.machine(LOCAL),
      required(env.localTrainer, 'fsdp-train on this machine'),
      env.extensionRoot,
      req,
      previous,
    ),
  ssh: async (req, target, env, progress, previous) =>
    launchRemote(await remoteContext(env, target.host), req, progress, previous),
  hosts: (req, _target, env, progress, previous) =>
    launchHosts(
      {
        settings: () => env.sshSettings(),
        base: env.remoteBase,
        extensionRoot: env.extensionRoot,
        machine: (alias) => env.sshMachine(alias),
      },
      req,
      progress,
      previous,
    ),
  slurm: async (req, target, env, progress, previous) => {
    const place =
      target.loginHost === LOCAL
        ? placeHere(
            required(env.localNative, 'fsdp-train-native on this machine'),
            path.join(path.dirname(req.configPath), 'runs'),
          )
        : placeOverSsh(
            target.loginHost,
            () => env.sshSettings(),
            await env.sshMachine(target.loginHost).absolute(env.remoteBase),
            env.extensionRoot,
          );
    return launchSlurm(
      { cluster: env.cluster(target.loginHost), place, companion: (p) => companionOn(env, target.loginHost, p) },
      req,
      progress,
      previous,
    );
  },
};

const COMMAND: Strategies<CommandLaunchRequest> = {
  local: (req, _target, env, _progress, previous) =>
    launchCommandLocal(env.machine(LOCAL), env.extensionRoot, req, previous),
  ssh: async (req, target, env, progress, previous) =>
    launchCommandRemote(await remoteContext(env, target.host), req, progress, previous),
  hosts: async () => {
    throw new Error(
      'a launch spec runs on one host or as a SLURM job: start your command across hosts with its own launcher (torchrun --nnodes, deepspeed --hostfile), or add slurm:',
    );
  },
  slurm: (req, target, env, progress, previous) =>
    launchCommandOnSlurm(
      {
        cluster: env.cluster(target.loginHost),
        place: (spec, report) => placeCommand(env, target.loginHost, spec, report),
      },
      req,
      progress,
      previous,
    ),
};

/**
 * Where a native run's owner starts: this machine, the SSH host, the first of several hosts (mpirun
 * runs from there), or for a SLURM job its login host — the batch step runs on a node of the
 * cluster, whose python3 the login host's stands for (a cluster's nodes share their software).
 */
function nativeOwnerHost(target: LaunchTarget, env: LaunchEnvironment): LoginHost {
  const settings = () => env.sshSettings();
  switch (target.kind) {
    case 'local':
      return localLoginHost();
    case 'ssh':
      return sshLoginHost(target.host, settings);
    case 'hosts':
      return sshLoginHost(target.hosts[0], settings);
    case 'slurm':
      return env.cluster(target.loginHost).host;
  }
}

async function remoteContext(env: LaunchEnvironment, host: string): Promise<RemoteContext> {
  const machine = env.sshMachine(host);
  return {
    machine,
    settings: () => env.sshSettings(),
    base: await machine.absolute(env.remoteBase),
    extensionRoot: env.extensionRoot,
  };
}

/** The companion on a login host: the extension's own here, a copy by content hash under fsdp.remote.directory over SSH. */
async function companionOn(env: LaunchEnvironment, loginHost: string, progress: (m: string) => void): Promise<string> {
  if (loginHost === LOCAL) return path.join(env.extensionRoot, COMPANION_DIR);
  const base = await env.sshMachine(loginHost).absolute(env.remoteBase);
  return new RemoteCompanionInstaller(loginHost, () => env.sshSettings(), env.extensionRoot).ensure(base, progress);
}

/** A command's SLURM job: the companion, the runs folder and the command's folder on the login host's filesystem. */
async function placeCommand(
  env: LaunchEnvironment,
  loginHost: string,
  spec: ResolvedLaunchSpec,
  progress: (m: string) => void,
): Promise<CommandPlacement> {
  const tensorboard = spec.tensorboard;
  const companionRoot = await companionOn(env, loginHost, progress);
  if (loginHost === LOCAL)
    return {
      companionRoot,
      runsDir: spec.runsDir,
      cwd: spec.cwd,
      ...(tensorboard ? { tensorboard } : {}),
    };
  const machine = env.sshMachine(loginHost);
  const base = await machine.absolute(env.remoteBase);
  return {
    companionRoot,
    runsDir: `${base}/runs`,
    cwd: await machine.absolute(spec.cwd),
    ...(tensorboard ? { tensorboard: await machine.absolute(tensorboard) } : {}),
  };
}

function required<T>(value: T | undefined, what: string): T {
  if (value === undefined)
    throw new Error(`cannot launch here: ${what} is not available (build the runtime: FSDP: Build native runtime)`);
  return value;
}
