// What the native runtime's benchmarks (bench:cpu, bench:sharding) share: a scratch folder,
// fsdp-train runs read back as their metrics events, the median, and the record of where and on
// which commit a result was measured.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { root } from '../setup/index.mjs';

const cli = path.join(root, 'bin', 'fsdp-train.mjs');

/** A fresh scratch folder for one benchmark's configs and runs. */
export function scratchFolder(name) {
  return mkdtempSync(path.join(os.tmpdir(), `fsdp-bench-${name}-`));
}

/**
 * Runs `fsdp-train CONFIG --run-dir <new folder under work> ...extraArgs`; resolves to the events of
 * its metrics.jsonl and its start and end (seconds since the epoch).
 */
export function train(work, configFile, extraArgs = []) {
  const runDir = path.join(work, `run-${Math.random().toString(36).slice(2)}`);
  const started = Date.now() / 1000;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, configFile, '--run-dir', runDir, ...extraArgs], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    child.on('exit', (code) => {
      if (code !== 0)
        return reject(new Error(`fsdp-train ${[configFile, ...extraArgs].join(' ')} exited with ${code}`));
      const events = readFileSync(path.join(runDir, 'metrics.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      resolve({ events, started, ended: Date.now() / 1000 });
    });
  });
}

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/** The 1-minute load average now: results say how busy the (shared) machine was. */
export const load = () => os.loadavg()[0];

/** The commit, and the machine a result was measured on (plus what the benchmark adds). */
export function provenance(extraMachine) {
  return {
    commit: execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim(),
    machine: {
      cpu: os.cpus()[0]?.model,
      cores: os.cpus().length,
      memory_gib: +(os.totalmem() / 2 ** 30).toFixed(1),
      node: process.version,
      ...extraMachine,
    },
  };
}

/** Writes bench/results/<name>-<day of result.date>.json and .md. */
export function writeResults(name, result, markdown) {
  const day = result.date.slice(0, 10);
  const out = path.join(root, 'bench', 'results');
  mkdirSync(out, { recursive: true });
  writeFileSync(path.join(out, `${name}-${day}.json`), JSON.stringify(result, null, 2) + '\n');
  writeFileSync(path.join(out, `${name}-${day}.md`), markdown);
}
