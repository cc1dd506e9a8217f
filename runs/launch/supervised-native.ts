// The native runtime under its run's owner: every native run — fsdp-train on this machine, the
// runtime or mpirun on an SSH host or across hosts, srun in a SLURM job — runs under the
// companion's supervisor (python/fsdp_studio/supervise.py --native), the one process that writes
// the run's run.json (native/FORMATS.md, "The run folder and its owner"). Any Python 3 of the host.
import { supervisorPath } from '../runtime/remote-companion';

/** The Python that runs the supervisor of a native run: the host's own. */
export const SUPERVISOR_PYTHON = 'python3';

/**
 * The supervisor's words before the runtime's argument vector. withParent: the process that starts
 * it (fsdp-train in a terminal) is the run's launcher, and the run ends if it is killed.
 */
export function nativeSupervisor(companionRoot: string, runDir: string, opts: { withParent?: boolean } = {}): string[] {
  return [
    SUPERVISOR_PYTHON,
    supervisorPath(companionRoot),
    '--run-dir',
    runDir,
    '--native',
    ...(opts.withParent ? ['--with-parent'] : []),
    '--',
  ];
}

/** `argv` (the runtime, fsdp-train, or mpirun around the runtime) under its run's supervisor. */
export function supervisedNativeArgv(companionRoot: string, runDir: string, argv: string[]): string[] {
  return [...nativeSupervisor(companionRoot, runDir), ...argv];
}
