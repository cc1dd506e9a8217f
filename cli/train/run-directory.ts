// A run's folder, runs/<run-id>/, as `fsdp-train` prepares it before the runtime starts: the
// resolved config (config.json, what the runtime reads), written atomically, and the starting
// manifest it hands to the run's owner — the supervisor (python/fsdp_studio/supervise.py), which
// writes it as run.json and keeps it current from then on.
import { renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ResolvedRunConfig } from '../../core/config/run-config';
import type { RunManifest } from '../../core/protocol/run-manifest';
import { runWorld, worldSizeOf } from '../../runs/launch/mpirun';
import { readManifestFile, startingManifest } from '../../runs/folder/run-folder';

export interface LaunchFacts {
  configPath: string;
  command: string[];
}

/** The manifest the run starts with (status "starting"); a resume keeps the run's identity and history. */
export function startingManifestFor(runDir: string, config: ResolvedRunConfig, facts: LaunchFacts): RunManifest {
  const world = runWorld(config);
  return startingManifest(
    {
      runId: path.basename(runDir),
      name: config.name ?? 'run',
      config: config as unknown as Record<string, unknown>,
      configPath: facts.configPath,
      world: { size: worldSizeOf(world), nnodes: world.nnodes, nproc_per_node: world.nprocPerNode },
      host: os.hostname(),
      target: config.launch.target ?? 'local',
      command: facts.command,
      maxSteps: config.training.max_steps,
    },
    readManifestFile(runDir),
  );
}

/** Writes config.json into the run folder (which must exist), atomically; returns its path. */
export function writeRunConfig(runDir: string, config: ResolvedRunConfig): string {
  const configFile = path.join(runDir, 'config.json');
  const tmp = `${configFile}.tmp-${process.pid}`;
  writeFileSync(tmp, `${JSON.stringify(config, null, 2)}\n`);
  renameSync(tmp, configFile);
  return configFile;
}
