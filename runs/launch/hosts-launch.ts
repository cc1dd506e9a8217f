// One run across several SSH hosts without a scheduler (launch.hosts): every host gets the same
// runtime build (the installer's folder is named by the sources' content hash, so a host that has it
// is not built again) and the data (by content), then mpirun --host starts the job from the first
// host, detached there as an SSH run is: the run lives on the first host, and is watched, stopped
// (SIGUSR1 to mpirun, which forwards it to every rank on every host) and resumed as one.
import { spawnSync } from 'node:child_process';
import { LAUNCHER_ENV, mpirunArgv, runWorld } from './mpirun';
import type { RunManifest } from '../../core/protocol/run-manifest';
import { checkHostAlias } from '../../core/remote/remote-command';
import { newRunId } from '../folder/run-folder';
import { manifestFor, type LaunchedRun, type LaunchRequest } from './launcher';
import { RemoteRuntimeInstaller } from '../runtime/remote-runtime';
import { RemoteCompanionInstaller } from '../runtime/remote-companion';
import { supervisedNativeArgv } from './supervised-native';
import { SshMachine } from '../machines/ssh-machine';
import { runSshChecked, SshError, type SshSettings } from '../machines/ssh';

export interface HostsContext {
  settings: () => SshSettings;
  /** fsdp.remote.directory as configured (may start with ~/): it must name one absolute folder on every host. */
  base: string;
  extensionRoot: string;
  /** The machine of an alias (the editor's, so the run is watched through the same one). */
  machine?: (alias: string) => SshMachine;
}

export async function launchHosts(
  ctx: HostsContext,
  req: LaunchRequest,
  progress: (message: string) => void,
  previous?: RunManifest,
): Promise<LaunchedRun> {
  const aliases = req.config.launch.hosts ?? [];
  const world = runWorld(req.config);
  if (aliases.length < 2) throw new Error('launch.hosts names fewer than two hosts');
  if (aliases.length !== world.nnodes)
    throw new Error(`launch.hosts names ${aliases.length} hosts but launch.nnodes is ${world.nnodes}`);
  for (const a of aliases) {
    const bad = checkHostAlias(a);
    if (bad) throw new SshError(`launch.hosts: ${bad}`);
  }
  const machines = aliases.map((a) => ctx.machine?.(a) ?? new SshMachine(a, ctx.settings));
  // mpirun runs the same command on every host: the runtime must be at the same path on each.
  const bases = await Promise.all(machines.map((m) => m.absolute(ctx.base)));
  const differing = bases.findIndex((b) => b !== bases[0]);
  if (differing > 0) {
    throw new SshError(
      `fsdp.remote.directory is ${bases[0]} on ${aliases[0]} but ${bases[differing]} on ${aliases[differing]}: mpirun starts the same path on every host; set it to an absolute folder that is the same on all of them`,
    );
  }
  const base = bases[0];
  const first = machines[0];
  const config = structuredClone(req.config);
  let binary = '';
  for (const [i, alias] of aliases.entries()) {
    const installer = new RemoteRuntimeInstaller(alias, ctx.settings, ctx.extensionRoot);
    const runtime = await installer.ensure(base, (m) => progress(`${alias}: ${m}`));
    if (i > 0 && runtime.binary !== binary)
      throw new SshError(
        `the runtime on ${alias} is at ${runtime.binary}, on ${aliases[0]} at ${binary}: not the same build`,
      );
    binary = runtime.binary;
    progress(`${alias}: runtime ${runtime.built ? 'built' : 'found'} (same sources hash); checking the data…`);
    config.data.train = await installer.ensureFile(base, req.config.data.train, (m) => progress(`${alias}: ${m}`));
    if (req.config.data.val)
      config.data.val = await installer.ensureFile(base, req.config.data.val, (m) => progress(`${alias}: ${m}`));
  }
  const names = aliases.map((a) => reachableName(a, ctx.settings()));
  const runId = previous?.run_id ?? newRunId(req.config.name);
  const runDir = req.resumeRunDir ?? `${base}/runs/${runId}`;
  config.logging.runs_dir = `${base}/runs`;
  config.launch.target = aliases[0];
  const configFile = `${runDir}/config.json`;
  if (!req.resumeRunDir) {
    await runSshChecked(
      first.target,
      ['mkdir', '-p', '--', runDir, { raw: '&&' }, 'cat', { raw: '>' }, configFile],
      ctx.settings(),
      'writing the run config',
      { input: `${JSON.stringify(config, null, 2)}\n`, timeoutMs: 60_000 },
    );
  }
  const runtimeArgv = mpirunArgv(
    world,
    [binary, '--config', configFile, '--run-dir', runDir, ...(req.resumeRunDir ? ['--resume', 'auto'] : [])],
    {
      asRoot: process.getuid?.() === 0,
      exported: ['OMP_WAIT_POLICY', ...LAUNCHER_ENV],
      hosts: names,
    },
  );
  // The run's owner on the first host: the companion's supervisor around mpirun.
  const companion = await new RemoteCompanionInstaller(first.target, ctx.settings, ctx.extensionRoot).ensure(
    base,
    (m) => progress(`${aliases[0]}: ${m}`),
  );
  const argv = supervisedNativeArgv(companion, runDir, runtimeArgv);
  progress(`starting ${world.nnodes * world.nprocPerNode} ranks on ${aliases.join(', ')} from ${aliases[0]}…`);
  const manifest = manifestFor({ ...req, config }, runId, argv, first.target, previous);
  const started = await first.start({ runDir, manifest, argv, cwd: runDir, env: { OMP_WAIT_POLICY: 'passive' } });
  return { ...started, target: first.target, runDir, runId, argv };
}

/**
 * The name mpirun on the first host uses for a host: what the alias resolves to in the ssh config
 * (`ssh -G`: its HostName), which cluster nodes resolve alike; the first host's own ssh config and
 * keys must let it reach that name without a password, as mpirun's launcher needs.
 */
export function reachableName(alias: string, settings: SshSettings): string {
  const r = spawnSync(
    settings.executable ?? 'ssh',
    [...(settings.configFile ? ['-F', settings.configFile] : []), '-G', '--', alias],
    { encoding: 'utf8', timeout: 10_000 },
  );
  const host = r.status === 0 ? /^hostname (\S+)$/m.exec(r.stdout)?.[1] : undefined;
  return host ?? alias.replace(/^.*@/, '');
}
