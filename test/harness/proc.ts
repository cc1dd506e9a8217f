// A process's children and command line, from /proc, for tests that find a run's processes by how
// they were started (the supervisor's fsdp-train, its mpirun). A process gone meanwhile has none.
import { readFileSync } from 'node:fs';

export function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

export function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').join(' ');
  } catch {
    return '';
  }
}
