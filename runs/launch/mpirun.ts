// The one place a multi-process job's launch command is made: Open MPI's mpirun around the
// runtime, for `npx fsdp-train --nproc N` and for the editor's launcher alike, so a run started
// either way is started the same way. The runtime never invents its own launcher or transport.
//
// Why each option:
//   --oversubscribe       one host: Open MPI otherwise refuses more ranks than it counts cores
//                         (4 ranks on a 2-core machine); several hosts are mapped instead with
//   --map-by ppr:N:node   nproc_per_node ranks on each host: those of launch.hosts, given as
//   --host a:N,b:N        (N slots each, so a host with fewer cores still takes its N ranks), or
//                         the person's MPI host file when the hosts are not named;
//   --bind-to none        each rank runs launch.threads_per_rank OpenMP threads: binding a rank
//                         to one core (Open MPI's default for 2 ranks or fewer) would stack them;
//   --allow-run-as-root   containers run as root, which mpirun refuses unless told;
//   -x NAME               passes the runtime's environment to ranks on other hosts too.
//
// A graceful stop goes to mpirun as SIGUSR1, which it forwards to every rank (each saves and
// stops after the current step); SIGTERM or SIGINT make mpirun abort the ranks within seconds.

import type { ResolvedRunConfig } from '../../core/config/run-config';

export interface MpirunWorld {
  nprocPerNode: number;
  nnodes: number;
}

/** Ranks in the job. */
export function worldSizeOf(w: MpirunWorld): number {
  return w.nprocPerNode * w.nnodes;
}

/** The job a run config asks for: launch.nproc_per_node ranks on each of launch.nnodes hosts. */
export function runWorld(config: Pick<ResolvedRunConfig, 'launch'>): MpirunWorld {
  return { nprocPerNode: config.launch.nproc_per_node ?? 1, nnodes: config.launch.nnodes ?? 1 };
}

/** What mpirun sends to the ranks for "stop after this step", and what aborts them. */
export const GRACEFUL_STOP_SIGNAL = 'SIGUSR1';

/**
 * Who launched a run, for its rank 0 to watch (native/src/cli/main.cc, launcher_pid): set by
 * fsdp-train and by the editor's detached start, and passed through mpirun to every rank.
 */
export const LAUNCHER_ENV = ['FSDP_LAUNCHER_PID', 'FSDP_LAUNCHER_HOST', 'FSDP_LAUNCHER_NAME'] as const;

/**
 * The signal that stops a run started by `command` after its current step, with a checkpoint:
 * mpirun forwards only SIGUSR1 to the ranks without aborting them; fsdp-train and a lone runtime
 * take SIGTERM. A native run's command is its supervisor's (runs/launch/supervised-native.ts): what
 * counts is what the supervisor runs, after its `--`. (A person's command under mpirun gets SIGTERM:
 * their script may not take SIGUSR1.)
 */
export function gracefulStopSignal(command: readonly string[] | undefined): 'SIGTERM' | typeof GRACEFUL_STOP_SIGNAL {
  return nativeCommand(command)?.[0] === 'mpirun' ? GRACEFUL_STOP_SIGNAL : 'SIGTERM';
}

/** The runtime's command: after the native supervisor's `--`, or the whole command when it was started directly. */
function nativeCommand(command: readonly string[] | undefined): readonly string[] | undefined {
  const dash = command?.indexOf('--') ?? -1;
  if (!command || dash < 0 || !command.slice(0, dash).includes('--native')) return command;
  return /(^|\/)supervise\.py$/.test(command[1] ?? '') ? command.slice(dash + 1) : command;
}

/**
 * mpirun's argument vector around `argv` (the runtime and its arguments). `exported`: environment
 * variable names to pass to every rank. `asRoot`: process.getuid?.() === 0 where it runs. `hosts`:
 * the job's hosts, one per node, as the host mpirun runs on reaches them (the first is that host).
 */
export function mpirunArgv(
  world: MpirunWorld,
  argv: string[],
  opts: { asRoot: boolean; exported?: string[]; hosts?: string[] },
): string[] {
  const n = worldSizeOf(world);
  const hosts = opts.hosts ?? [];
  if (hosts.length && hosts.length !== world.nnodes)
    throw new Error(`${hosts.length} hosts for a job of ${world.nnodes} nodes: one host per node`);
  // Names and IPv4 addresses: mpirun reads "name:slots", so an IPv6 address cannot be given here.
  for (const h of hosts)
    if (!/^[A-Za-z0-9_][A-Za-z0-9._-]*$/.test(h))
      throw new Error(`not a host name mpirun can take: ${JSON.stringify(h)}`);
  return [
    'mpirun',
    '-n',
    String(n),
    ...(hosts.length ? ['--host', hosts.map((h) => `${h}:${world.nprocPerNode}`).join(',')] : []),
    ...(world.nnodes > 1 ? ['--map-by', `ppr:${world.nprocPerNode}:node`] : ['--oversubscribe']),
    '--bind-to',
    'none',
    ...(opts.asRoot ? ['--allow-run-as-root'] : []),
    ...(opts.exported ?? []).flatMap((name) => ['-x', name]),
    ...argv,
  ];
}

/**
 * This process's rank when an MPI launcher started it (mpirun, or srun with PMI/PMIx); undefined
 * when none did.
 */
export function launcherRank(env: Record<string, string | undefined>): number | undefined {
  for (const name of ['OMPI_COMM_WORLD_RANK', 'PMIX_RANK', 'PMI_RANK']) {
    const v = env[name];
    if (v !== undefined && /^\d+$/.test(v)) return Number(v);
  }
  return undefined;
}
