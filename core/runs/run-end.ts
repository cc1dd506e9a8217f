// Why a run ended when it never wrote run_end, in words: its processes vanished (killed, crashed)
// or its launcher (fsdp-train) wrote the exit into run.json. A run killed by signal 9 is most
// often the kernel's out-of-memory killer, which says nothing to the process: the message says so
// and puts the run's memory plan beside the machine's memory, so the person can tell.
import type { RunStartEvent } from '../generated/metrics-event';
import { formatBytes } from './run-history';

export interface EndWithoutRunEnd {
  /** run.json's end_reason, when the launcher wrote one ("the runtime ended by signal 9"). */
  manifestReason?: string;
  /** The run's process group, when it had one. */
  pgid?: number;
  /** The run's run_start, when it got that far: its memory plan, world and host memory. */
  start?: RunStartEvent;
  /** This machine's physical memory, for runs on this machine whose run_start does not say. */
  machineMemory?: number;
  /** The end of the run's stderr.log (runs launched from the editor have one). */
  stderrTail?: string;
}

const SIGNAL_NAMES: Record<number, string> = { 1: 'SIGHUP', 2: 'SIGINT', 6: 'SIGABRT', 7: 'SIGBUS', 8: 'SIGFPE', 9: 'SIGKILL', 11: 'SIGSEGV', 15: 'SIGTERM' };
/** The kernel's OOM killer sends SIGKILL. */
const OOM_SIGNAL = 9;
const STDERR_LINES = 3;

/** The signal number a reason names ("… by signal 9"), if any. */
export function signalIn(reason: string | undefined): number | undefined {
  const m = reason && /\bsignal (\d+)\b/.exec(reason);
  return m ? Number(m[1]) : undefined;
}

/** The whole message: what happened, the memory hint when it may have been memory, what stderr said. */
export function describeEndWithoutRunEnd(f: EndWithoutRunEnd): string {
  const parts: string[] = [];
  const signal = signalIn(f.manifestReason);
  if (f.manifestReason) {
    const name = signal !== undefined ? SIGNAL_NAMES[signal] : undefined;
    parts.push(name && !f.manifestReason.includes(name) ? `${f.manifestReason} (${name})` : f.manifestReason);
  } else {
    parts.push(`the trainer's processes${f.pgid !== undefined ? ` (group ${f.pgid})` : ''} ended without reporting the end of the run`);
  }
  const memory = memoryBeside(f.start, f.machineMemory);
  if (signal === OOM_SIGNAL) {
    parts.push(`the system may have run out of memory (the kernel's out-of-memory killer ends processes with signal 9)${memory ? `: ${memory}` : ''}`);
  } else if (signal === undefined && !f.manifestReason && memory) {
    // No word from anyone: killed outright (the OOM killer among others) or crashed.
    parts.push(`if the system ran out of memory: ${memory}`);
  }
  const said = lastLines(f.stderrTail);
  // Runs started from a terminal write their stderr there, not to stderr.log.
  if (said) parts.push(`stderr.log ends with: ${said}`);
  return parts.join('; ');
}

/** "the plan needs 23.7 GiB per rank × 2 ranks on this host (47.4 GiB); the machine has 11.8 GiB". */
export function memoryBeside(start: RunStartEvent | undefined, machineMemory: number | undefined): string | undefined {
  const perRank = start?.memory_plan?.total;
  if (!start || perRank === undefined) return undefined;
  const host = start.world.ranks[0]?.host;
  const onHost = host !== undefined ? start.world.ranks.filter((r) => r.host === host).length : start.world.size;
  const ranks = Math.max(1, onHost);
  const need = ranks > 1 ? `${formatBytes(perRank)} per rank × ${ranks} ranks on this host (${formatBytes(perRank * ranks)})` : `${formatBytes(perRank)}`;
  const has = start.host_memory ?? machineMemory;
  return `the memory plan needs ${need}${has !== undefined ? `; the machine has ${formatBytes(has)}` : ''}`;
}

/** fsdp-train's own first line ("fsdp-train: run <id> in <dir>"): where, not why. */
const LAUNCHER_INFO = /^fsdp-train: run \S+ in /;

function lastLines(text: string | undefined): string | undefined {
  if (!text) return undefined;
  const lines = text.split('\n').map((l) => l.trim()).filter((l) => l && !LAUNCHER_INFO.test(l));
  return lines.length ? lines.slice(-STDERR_LINES).join(' ⏎ ') : undefined;
}
