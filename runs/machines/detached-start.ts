// Starting a trainer detached, the same way on this machine and over ssh: /bin/sh, already the
// leader of a new session (spawn's `detached`, or `setsid` remotely), writes run.json with its own
// pid as the run's pid and process group, then execs the trainer, which keeps that pid. So the
// manifest names the process before the trainer runs a single instruction: no window in which a
// run exists that Stop cannot reach, and no race with the trainer's own writes to run.json.
import type { RunManifest } from '../../core/protocol/run-manifest';

/** $1 $2 $3: manifest text around the two pid places; $4: manifest path; then the argv to exec. */
export const START_SCRIPT = [
  'printf %s "$1" "$$" "$2" "$$" "$3" > "$4.tmp" && mv -f "$4.tmp" "$4" || exit 97',
  'shift 4',
  'exec "$@"',
].join('\n');

/** Exit status of the start script when it could not write run.json. */
export const START_SCRIPT_FAILED = 97;

/** The argument vector that writes `manifest` (pids and pgid filled in) to `manifestPath`, then execs `argv`. */
export function detachedStartArgv(manifest: RunManifest, manifestPath: string, argv: string[]): string[] {
  const hole = `@@fsdp-pid-${Math.random().toString(36).slice(2)}@@`;
  const text = `${JSON.stringify({ ...manifest, pids: [hole], pgid: hole }, null, 2)}\n`;
  const parts = text.split(JSON.stringify(hole));
  if (parts.length !== 3) throw new Error('internal: the manifest template must hold the pid exactly twice');
  return ['/bin/sh', '-c', START_SCRIPT, 'fsdp-start', parts[0], parts[1], parts[2], manifestPath, ...argv];
}
