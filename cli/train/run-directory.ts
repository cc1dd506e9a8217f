// A run's folder, runs/<run-id>/, as `fsdp-train` creates it before the runtime starts: the
// resolved config (config.json, what the runtime reads) and the manifest (run.json, status
// "starting", made by runs/folder/run-folder.ts as for every run), both written atomically. The
// runtime keeps run.json current from then on.
import os from 'node:os';
import path from 'node:path';
import type { ResolvedRunConfig } from '../../core/config/run-config';
import { runWorld, worldSizeOf } from '../../runs/launch/mpirun';
import { writeJsonAtomically, writeStartingManifest } from '../../runs/folder/run-folder';

export interface LaunchFacts {
  configPath: string;
  command: string[];
}

/**
 * Creates (or, when resuming, reuses) the run folder: writes config.json and run.json with status
 * "starting". Returns the path of config.json.
 */
export function prepareRunDirectory(runDir: string, config: ResolvedRunConfig, facts: LaunchFacts): string {
  const world = runWorld(config);
  writeStartingManifest(runDir, {
    runId: path.basename(runDir),
    name: config.name ?? 'run',
    config: config as unknown as Record<string, unknown>,
    configPath: facts.configPath,
    world: { size: worldSizeOf(world), nnodes: world.nnodes, nproc_per_node: world.nprocPerNode },
    host: os.hostname(),
    target: config.launch.target ?? 'local',
    command: facts.command,
    maxSteps: config.training.max_steps,
  });
  const configFile = path.join(runDir, 'config.json');
  writeJsonAtomically(configFile, config);
  return configFile;
}
