// A run's folder, runs/<run-id>/, as `fsdp-train` creates it before the runtime starts: the
// resolved config (config.json, what the runtime reads) and the manifest (run.json, status
// "starting"), both written atomically. The runtime keeps run.json current from then on.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ResolvedRunConfig } from '../../core/config/run-config';
import { parseRunManifest, RUN_MANIFEST_VERSION, type RunManifest } from '../../core/protocol/run-manifest';

/** `<name>-YYYYMMDD-HHMMSS-<4 hex>`: sorts by start time, unique across quick relaunches. */
export function newRunId(name: string, now = new Date()): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  const stamp = `${now.getFullYear()}${pad(now.getMonth() + 1)}${pad(now.getDate())}-${pad(now.getHours())}${pad(now.getMinutes())}${pad(now.getSeconds())}`;
  return `${name}-${stamp}-${randomBytes(2).toString('hex')}`;
}

export function writeJsonAtomically(file: string, value: unknown): void {
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, JSON.stringify(value, null, 2) + '\n');
  renameSync(tmp, file);
}

export function readManifest(runDir: string): RunManifest | undefined {
  const file = path.join(runDir, 'run.json');
  if (!existsSync(file)) return undefined;
  const parsed = parseRunManifest(readFileSync(file, 'utf8'));
  return 'manifest' in parsed ? parsed.manifest : undefined;
}

/** The most recently created run of this config name under runsDir, for `--resume auto`. */
export function latestRunOf(runsDir: string, name: string): string | undefined {
  if (!existsSync(runsDir)) return undefined;
  let best: { dir: string; created: number } | undefined;
  for (const entry of readdirSync(runsDir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const dir = path.join(runsDir, entry.name);
    const m = readManifest(dir);
    if (m && m.name === name && (!best || m.created > best.created)) best = { dir, created: m.created };
  }
  return best?.dir;
}

export interface LaunchFacts {
  configPath: string;
  command: string[];
}

/**
 * Creates (or, when resuming, reuses) the run folder: writes config.json and run.json with status
 * "starting". Returns the path of config.json.
 */
export function prepareRunDirectory(runDir: string, config: ResolvedRunConfig, facts: LaunchFacts): string {
  mkdirSync(runDir, { recursive: true });
  const configFile = path.join(runDir, 'config.json');
  writeJsonAtomically(configFile, config);
  const now = Date.now() / 1000;
  const previous = readManifest(runDir);
  const manifest: RunManifest = {
    ...previous,
    v: RUN_MANIFEST_VERSION,
    run_id: previous?.run_id ?? path.basename(runDir),
    name: config.name ?? 'run',
    created: previous?.created ?? now,
    updated: now,
    status: 'starting',
    max_steps: config.training.max_steps,
    config: config as unknown as RunManifest['config'],
    config_path: facts.configPath,
    world: { size: config.launch.nproc_per_node! * config.launch.nnodes!, nnodes: config.launch.nnodes, nproc_per_node: config.launch.nproc_per_node },
    host: os.hostname(),
    target: config.launch.target ?? 'local',
    pids: [process.pid],
    command: facts.command,
  };
  delete manifest.end_reason;
  writeJsonAtomically(path.join(runDir, 'run.json'), manifest);
  return configFile;
}

/** Marks a run failed when the runtime ended without saying so itself (killed by a signal). */
export function markEndedWithoutRunEnd(runDir: string, reason: string): void {
  const m = readManifest(runDir);
  if (!m || (m.status !== 'starting' && m.status !== 'running')) return;
  writeJsonAtomically(path.join(runDir, 'run.json'), { ...m, status: 'failed', end_reason: reason, updated: Date.now() / 1000 });
}
