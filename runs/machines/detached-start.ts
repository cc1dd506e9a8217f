// Starting a trainer detached, the same way on this machine and over ssh: /bin/sh, already the
// leader of a new session (spawn's `detached`, or `setsid` remotely), writes run.json with its own
// pid as the run's pid and process group (and when it started, so Stop can tell a reused pid), puts
// the run's id in the environment as the mark of its processes (runs/stop/run-group.ts), then execs
// the trainer, which keeps that pid. So the manifest names the process before the trainer runs a
// single instruction: no window in which a run exists that Stop cannot reach, and no race with the
// trainer's own writes to run.json.
import type { RunManifest } from '../../core/protocol/run-manifest';
import { manifestText } from '../folder/run-folder';
import { RUN_MARK_ENV } from '../stop/run-group';

/**
 * $1…$5: manifest text around the places of the pid (twice), the leader's start time and the boot
 * id; $6: manifest path; $7: the run id, exported as the run's mark; then the argv to exec. The
 * start time is field 22 of /proc/$$/stat (what Stop compares before it signals the group).
 */
export const START_SCRIPT = [
  "t=$(sed 's/^.*) //' /proc/$$/stat 2>/dev/null | cut -d' ' -f20) b=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null)",
  'printf %s "$1" "$$" "$2" "$$" "$3" "${t:-0}" "$4" "$b" "$5" > "$6.tmp" && mv -f "$6.tmp" "$6" || exit 97',
  `${RUN_MARK_ENV}=$7; export ${RUN_MARK_ENV}`,
  'shift 7',
  // The process exec'd below leads the run: the native trainer watches it (when it is mpirun or
  // fsdp-train) and ends the run, saying so, if it is killed (native/FORMATS.md).
  'FSDP_LAUNCHER_PID=$$ FSDP_LAUNCHER_HOST=$(uname -n) FSDP_LAUNCHER_NAME=${1##*/}; export FSDP_LAUNCHER_PID FSDP_LAUNCHER_HOST FSDP_LAUNCHER_NAME',
  'exec "$@"',
].join('\n');

/** Exit status of the start script when it could not write run.json. */
export const START_SCRIPT_FAILED = 97;

/**
 * The argument vector that writes `manifest` (pids, pgid, leader_start and boot_id filled in) to
 * `manifestPath`, marks the run's processes with its id, then execs `argv`.
 */
export function detachedStartArgv(manifest: RunManifest, manifestPath: string, argv: string[]): string[] {
  const hole = `@@fsdp-${Math.random().toString(36).slice(2)}@@`;
  const [pid, start, boot] = [`${hole}pid`, `${hole}start`, `${hole}boot`];
  // The places in this order, whatever the manifest held before.
  const { pids: _pids, pgid: _pgid, leader_start: _start, boot_id: _boot, ...rest } = manifest;
  const text = manifestText({
    ...rest,
    pids: [pid],
    pgid: pid,
    leader_start: start,
    boot_id: boot,
  } as unknown as RunManifest);
  // Numbers replace their quoted hole; the boot id stays a string, so only its hole's text goes.
  const parts = splitAt(text, [JSON.stringify(pid), JSON.stringify(pid), JSON.stringify(start), boot]);
  return ['/bin/sh', '-c', START_SCRIPT, 'fsdp-start', ...parts, manifestPath, manifest.run_id, ...argv];
}

function splitAt(text: string, holes: string[]): string[] {
  const parts: string[] = [];
  let rest = text;
  for (const h of holes) {
    const at = rest.indexOf(h);
    if (at < 0) throw new Error('internal: the manifest template lacks a place for the start script to fill');
    parts.push(rest.slice(0, at));
    rest = rest.slice(at + h.length);
  }
  return [...parts, rest];
}
