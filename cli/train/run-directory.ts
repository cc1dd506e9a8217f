// A run's folder, runs/<run-id>/, as `fsdp-train` prepares it before the runtime starts: the
// resolved config (config.json, what the runtime reads), written atomically, and the starting
// manifest it hands to the run's owner — the supervisor (python/fsdp_studio/supervise.py), which
// writes it as run.json and keeps it current from then on.
import { closeSync, constants, renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ResolvedRunConfig } from '../../core/config/run-config';
import { openRegularFileForWriting } from '../../core/protocol/regular-file';
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
  // The temporary name, not through a link planted there; the rename replaces a link at config.json.
  const fd = openRegularFileForWriting(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC);
  try {
    writeFileSync(fd, `${JSON.stringify(config, null, 2)}\n`);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, configFile);
  return configFile;
}
