// Starting a run detached, the same way on this machine and over ssh: /bin/sh, already the leader
// of a new session (spawn's `detached`, or `setsid` remotely), puts the run's id in the environment
// as the mark of its processes (runs/stop/run-group.ts) and execs the run's owner — the
// supervisor (python/fsdp_studio/supervise.py), which keeps that pid, leads the run's process group
// and writes run.json first thing: the starting manifest it is given in FSDP_RUN_MANIFEST, its own
// pid as the run's pid and process group, and when it started (so Stop can tell a reused pid).
import type { RunManifest } from '../../core/protocol/run-manifest';
import { RUN_MARK_ENV } from '../stop/run-group';

/** The starting manifest's environment variable, read (and not passed on) by the supervisor. */
export const MANIFEST_ENV = 'FSDP_RUN_MANIFEST';

/** $1: the run id, exported as the run's mark; then the argv to exec. */
export const START_SCRIPT = [
  `${RUN_MARK_ENV}=$1; export ${RUN_MARK_ENV}`,
  'shift',
  // The process exec'd below leads the run: the native trainer watches it and ends the run,
  // saying so, if it is killed (native/FORMATS.md).
  'FSDP_LAUNCHER_PID=$$ FSDP_LAUNCHER_HOST=$(uname -n) FSDP_LAUNCHER_NAME=${1##*/}; export FSDP_LAUNCHER_PID FSDP_LAUNCHER_HOST FSDP_LAUNCHER_NAME',
  'exec "$@"',
].join('\n');

/** The argument vector that marks the run's processes with its id, then execs `argv` (the supervisor's). */
export function detachedStartArgv(runId: string, argv: string[]): string[] {
  return ['/bin/sh', '-c', START_SCRIPT, 'fsdp-start', runId, ...argv];
}

/** The environment entry that hands the starting manifest to the supervisor. */
export function manifestEnv(manifest: RunManifest): Record<string, string> {
  // Process facts are the supervisor's to write: a resume's old ones would name another process.
  const { pids: _pids, pgid: _pgid, leader_start: _start, boot_id: _boot, ...rest } = manifest;
  return { [MANIFEST_ENV]: JSON.stringify(rest) };
}
