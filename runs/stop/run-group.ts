// Whether a process group is the run's, asked before any signal is sent to it. run.json is a file
// anyone can write and a pid is reused once its process is gone, so the group it names is trusted
// only when, on the run's host, now:
//   - the group id is above 1 (kill(-0) is the caller's own group, kill(-1) every process the user
//     owns, group 1 the system's) and is not the group of the process asking;
//   - its leader (the process whose pid is the group id) is the process the run was started as:
//     same start time (clock ticks since boot, /proc/PID/stat field 22) and boot as run.json
//     recorded, or for a run.json without that record, started no earlier than the run was made;
//   - it carries the run's mark: FSDP_RUN_ID=<run id> in its environment (/proc/PID/environ),
//     which the detached start sets and every process of the run inherits;
//   - when the leader is gone, every process left in the group carries the mark.
// The check is one POSIX sh script over /proc (GNU grep for the NUL-separated environment), run the
// same way on this machine and over ssh, so there is one implementation of the rule. It answers
// "ok", "gone" (nothing left in the group) or "refused WHY", then (unless refused) the pids asked
// about that carry the mark (ranks mpirun put in groups of their own, ended if they outlive it).

import type { RunManifest } from '../../core/protocol/run-manifest';

/** What the run recorded about its group (run.json's pgid, leader_start, boot_id, run_id, created). */
export interface RunGroupMark {
  pgid: number;
  runId: string;
  leaderStart?: number;
  bootId?: string;
  /** run.json's `created` (seconds since the epoch): a leader started before it is not the run's. */
  createdAt?: number;
  /** Other processes of the run (run.json's pids) to vet for the mark. */
  pids?: number[];
}

export type RunGroupVerdict =
  | { verdict: 'ok'; markedPids: number[] }
  | { verdict: 'gone'; markedPids: number[] }
  | { verdict: 'refused'; reason: string };

/** The environment variable that marks every process of a run (set by the detached start). */
export const RUN_MARK_ENV = 'FSDP_RUN_ID';

export const RUN_GROUP_CHECK = `
pgid=$1 run=$2 ticks=$3 boot=$4 since=$5 verdict=
shift 5
refuse() { echo "refused $1"; exit 0; }
# Field N of /proc/PID/stat: the fields after the command name, which may hold spaces or parentheses.
field() { sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f$(($2 - 2)); }
marked() { grep -qzxF "FSDP_RUN_ID=$run" "/proc/$1/environ" 2>/dev/null; }
case $pgid in ''|*[!0-9]*) refuse "the process group run.json names is not a number";; esac
[ "$pgid" -gt 1 ] || refuse "run.json names process group $pgid, which is never a run's (0 is the caller's own group, 1 the system's)"
[ -r /proc/self/stat ] || refuse "this host has no /proc to tell whose process group $pgid is"
own=$(field $$ 5)
[ "$pgid" != "$own" ] || refuse "process group $pgid is the group of the process asking to stop it, not a run's"
# A zombie leader (ended, not yet reaped by its parent) leads nothing: look at what is left.
if [ -d "/proc/$pgid" ] && [ "$(field "$pgid" 3)" != Z ]; then
  [ "$(field "$pgid" 5)" = "$pgid" ] || refuse "process $pgid no longer leads a process group of its own: it is not the run's leader"
  started=$(field "$pgid" 22)
  if [ -n "$ticks" ]; then
    [ "$started" = "$ticks" ] || refuse "process $pgid started at another time than the run's leader (clock tick $started, run.json records $ticks): its id was reused"
    if [ -n "$boot" ] && [ -r /proc/sys/kernel/random/boot_id ]; then
      [ "$(cat /proc/sys/kernel/random/boot_id)" = "$boot" ] || refuse "the host rebooted since the run started: process $pgid is not its leader"
    fi
  elif [ -n "$since" ]; then
    at=$(( $(sed -n 's/^btime //p' /proc/stat) + started / $(getconf CLK_TCK) ))
    [ "$at" -ge "$since" ] || refuse "process $pgid started (at $at) before the run was made (at $since): it is not the run's leader"
  fi
  marked "$pgid" || refuse "process $pgid does not carry the run's mark (FSDP_RUN_ID=$run in its environment): it is not the run's"
else
  # The group's living members (not zombies): one pass over every stat ("pid (comm) state ppid pgrp …").
  members=$(cat /proc/[0-9]*/stat 2>/dev/null | sed -n "s/^\\([0-9]*\\) (.*) [^ZXx] [0-9-]* $pgid .*/\\1/p")
  for p in $members; do
    marked "$p" || refuse "the run's leader $pgid is gone and process $p of its group does not carry the run's mark: not the run's"
  done
  [ -n "$members" ] || verdict=gone
fi
echo "\${verdict:-ok}"
for p in "$@"; do
  case $p in ''|*[!0-9]*) continue;; esac
  [ "$p" -gt 1 ] && marked "$p" && echo "pid $p"
done
exit 0
`;

/** The mark of the group run.json names (or the launch reported, for a run.json without one). */
export function runGroupMarkOf(manifest: RunManifest, launchedPgid?: number): RunGroupMark | undefined {
  const pgid = manifest.pgid ?? launchedPgid;
  if (pgid === undefined) return undefined;
  return {
    pgid,
    runId: manifest.run_id,
    // The start time recorded belongs to the group run.json names, not to one the launch reported.
    ...(manifest.pgid !== undefined && manifest.leader_start !== undefined
      ? { leaderStart: manifest.leader_start }
      : {}),
    ...(manifest.boot_id ? { bootId: manifest.boot_id } : {}),
    createdAt: manifest.created,
    pids: (manifest.pids ?? []).filter((p) => p !== pgid),
  };
}

/** The script's arguments (after `sh -c SCRIPT NAME`). */
export function runGroupCheckArgs(mark: RunGroupMark): string[] {
  const since = mark.createdAt !== undefined ? String(Math.floor(mark.createdAt) - 1) : '';
  return [
    String(mark.pgid),
    mark.runId,
    mark.leaderStart !== undefined ? String(mark.leaderStart) : '',
    mark.bootId ?? '',
    since,
    ...(mark.pids ?? []).map(String),
  ];
}

/** Reads the script's answer. */
export function parseRunGroupVerdict(out: string): RunGroupVerdict {
  const lines = out.split('\n').filter(Boolean);
  const [head, ...rest] = lines;
  const markedPids = rest.filter((l) => l.startsWith('pid ')).map((l) => Number(l.slice(4)));
  if (head === 'gone') return { verdict: 'gone', markedPids };
  if (head === 'ok') return { verdict: 'ok', markedPids };
  if (head?.startsWith('refused ')) return { verdict: 'refused', reason: head.slice('refused '.length) };
  return {
    verdict: 'refused',
    reason: `the check of the run's process group gave no answer${out.trim() ? `: ${out.trim().slice(0, 200)}` : ''}`,
  };
}
