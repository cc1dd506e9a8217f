// What every benchmark's results file records about where and when it ran: the commit, the date and
// the machine (CPU, cores, Node, the 1-minute load, since the machines are shared).
import { execFileSync } from 'node:child_process';
import os from 'node:os';

export interface BenchMachine {
  cpu: string | undefined;
  cores: number;
  node: string;
  loadAverage1m: number;
}

export interface BenchContext {
  /** The short commit of the checkout at `root`, or 'unknown' outside git. */
  commit: string;
  /** YYYY-MM-DD (UTC): the date in the results file's name. */
  date: string;
  machine: BenchMachine;
}

export function benchContext(root: string): BenchContext {
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
  } catch {
    // not a git checkout: the results say so
  }
  return {
    commit,
    date: new Date().toISOString().slice(0, 10),
    machine: {
      cpu: os.cpus()[0]?.model,
      cores: os.cpus().length,
      node: process.version,
      loadAverage1m: +os.loadavg()[0].toFixed(2),
    },
  };
}
