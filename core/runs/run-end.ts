// Why a run ended when it never wrote run_end, in words: its processes vanished (killed, crashed)
// or its launcher (fsdp-train) wrote the exit into run.json. A run killed by signal 9 may have been
// killed by the kernel's out-of-memory killer, which says nothing to the process — or by a
// `kill -9`, a scheduler, a Stop's forced kill. Memory is named as the cause only with evidence: its
// memory cgroup counted an OOM kill, or what it needed or used was near what it could have.
import type { RunStartEvent } from '../generated/metrics-event';
import { formatBytes } from './run-history';

export interface EndWithoutRunEnd {
  /** run.json's end_reason, when the launcher wrote one ("the runtime ended by signal 9"). */
  manifestReason?: string;
  /** The run's process group, when it had one. */
  pgid?: number;
  /** The run's run_start, when it got that far: its memory plan, world and host memory. */
  start?: RunStartEvent;
  /** What is known of the memory the run had and used at its end (runs on this machine). */
  memory?: MemoryAtEnd;
  /** The end of this attempt's stderr (runs launched from the editor have one; a resume's earlier output is not in it). */
  stderrTail?: string;
}

export interface MemoryAtEnd {
  /** The most the run's processes could hold: the machine's memory, or their memory cgroup's limit when lower. */
  limit?: number;
  /** Where that limit is: "the machine", "memory cgroup /sys/fs/cgroup/memory/…". */
  limitOf?: string;
  /** The most they were seen to hold: the cgroup's peak, or the ranks' last resident memory together. */
  used?: number;
  usedWhat?: string;
  /** The cgroup counted an out-of-memory kill while the run was watched. */
  oomKill?: boolean;
}

const SIGNAL_NAMES: Record<number, string> = {
  1: 'SIGHUP',
  2: 'SIGINT',
  6: 'SIGABRT',
  7: 'SIGBUS',
  8: 'SIGFPE',
  9: 'SIGKILL',
  11: 'SIGSEGV',
  15: 'SIGTERM',
};
/** The kernel's OOM killer sends SIGKILL. */
const OOM_SIGNAL = 9;
const STDERR_LINES = 3;
/** Needing or holding this share of the limit is "near" it: the kernel reclaims caches, then kills. */
const NEAR_LIMIT = 0.8;

/** The signal number a reason names ("… by signal 9"), if any. */
export function signalIn(reason: string | undefined): number | undefined {
  const m = reason && /\bsignal (\d+)\b/.exec(reason);
  return m ? Number(m[1]) : undefined;
}

/** The whole message: what happened, memory when the evidence points there, what this attempt's stderr said. */
export function describeEndWithoutRunEnd(f: EndWithoutRunEnd): string {
  const parts: string[] = [];
  const signal = signalIn(f.manifestReason);
  if (f.manifestReason) {
    const name = signal !== undefined ? SIGNAL_NAMES[signal] : undefined;
    parts.push(name && !f.manifestReason.includes(name) ? `${f.manifestReason} (${name})` : f.manifestReason);
  } else {
    parts.push(
      `the trainer's processes${f.pgid !== undefined ? ` (group ${f.pgid})` : ''} ended without reporting the end of the run`,
    );
  }
  const verdict = memoryVerdict(f.start, f.memory);
  if (signal === OOM_SIGNAL) {
    if (verdict.kind === 'oom-kill') parts.push(`the kernel's out-of-memory killer ended it: ${verdict.words}`);
    else if (verdict.kind === 'near')
      parts.push(
        `the system may have run out of memory (the kernel's out-of-memory killer ends processes with signal 9): ${verdict.words}`,
      );
    else if (verdict.kind === 'far')
      parts.push(
        `not for want of memory (${verdict.words}): something sent it SIGKILL — a kill -9, a scheduler, or a stop that did not finish in time`,
      );
    else
      parts.push(
        "SIGKILL comes from the kernel's out-of-memory killer, a kill -9, a scheduler or a stop that did not finish in time; nothing here tells which",
      );
  } else if (signal === undefined && !f.manifestReason && (verdict.kind === 'oom-kill' || verdict.kind === 'near')) {
    // No word from anyone: killed outright or crashed; memory is named only when it was short.
    parts.push(
      verdict.kind === 'oom-kill'
        ? `the kernel's out-of-memory killer ended it: ${verdict.words}`
        : `memory was short: ${verdict.words}`,
    );
  }
  const said = lastLines(f.stderrTail);
  // Runs started from a terminal write their stderr there, not to stderr.log.
  if (said) parts.push(`stderr.log ends with: ${said}`);
  return parts.join('; ');
}

type MemoryVerdict = { kind: 'oom-kill' | 'near' | 'far'; words: string } | { kind: 'unknown' };

/** Whether memory was the likely end: an OOM kill counted, needs near the limit, needs far from it, or no facts. */
export function memoryVerdict(start: RunStartEvent | undefined, m: MemoryAtEnd | undefined): MemoryVerdict {
  const plan = planOnHost(start);
  const limit = m?.limit ?? start?.host_memory;
  const limitOf = m?.limitOf ?? 'the machine';
  const facts = [
    plan ? `the memory plan needs ${plan.words}` : '',
    m?.used !== undefined ? `${m.usedWhat ?? 'it held'} ${formatBytes(m.used)}` : '',
    limit !== undefined ? `${limitOf} has ${formatBytes(limit)}` : '',
  ]
    .filter(Boolean)
    .join('; ');
  if (m?.oomKill)
    return { kind: 'oom-kill', words: `its memory cgroup counted an OOM kill${facts ? ` (${facts})` : ''}` };
  if (limit === undefined || (plan === undefined && m?.used === undefined)) return { kind: 'unknown' };
  const need = Math.max(plan?.bytes ?? 0, m?.used ?? 0);
  return { kind: need >= NEAR_LIMIT * limit ? 'near' : 'far', words: facts };
}

/** The plan of the ranks on rank 0's host, in bytes and in words. */
function planOnHost(start: RunStartEvent | undefined): { bytes: number; words: string } | undefined {
  const perRank = start?.memory_plan?.total;
  if (!start || perRank === undefined) return undefined;
  const host = start.world.ranks[0]?.host;
  const onHost = host !== undefined ? start.world.ranks.filter((r) => r.host === host).length : start.world.size;
  const ranks = Math.max(1, onHost);
  return {
    bytes: perRank * ranks,
    words:
      ranks > 1
        ? `${formatBytes(perRank)} per rank × ${ranks} ranks on this host (${formatBytes(perRank * ranks)})`
        : formatBytes(perRank),
  };
}

/** fsdp-train's own first line ("fsdp-train: run <id> in <dir>"): where, not why. */
const LAUNCHER_INFO = /^fsdp-train: run \S+ in /;

function lastLines(text: string | undefined): string | undefined {
  if (!text) return undefined;
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !LAUNCHER_INFO.test(l));
  return lines.length ? lines.slice(-STDERR_LINES).join(' ⏎ ') : undefined;
}
