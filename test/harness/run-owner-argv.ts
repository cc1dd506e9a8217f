// Test processes started as a run is started: under the run's owner, the companion's supervisor
// (python/fsdp_studio/supervise.py) of this checkout, which writes run.json — the only writer.
import os from 'node:os';
import path from 'node:path';
import type { RunManifest } from '../../core/protocol/run-manifest';
import { supervisedNativeArgv } from '../../runs/launch/supervised-native';
import { COMPANION_DIR, supervisorPath } from '../../runs/runtime/remote-companion';

export const COMPANION_ROOT = path.resolve(__dirname, '..', '..', COMPANION_DIR);

/** `argv` under the supervisor: as the native runtime (--native: its events make run.json), or as a person's command. */
export function underOwner(runDir: string, argv: string[], kind: 'native' | 'command' = 'command'): string[] {
  return kind === 'native'
    ? supervisedNativeArgv(COMPANION_ROOT, runDir, argv)
    : ['python3', supervisorPath(COMPANION_ROOT), '--run-dir', runDir, '--', ...argv];
}

/** What a run's owner runs: the words after the supervisor's `--` (the whole argv when it is not a supervisor's). */
export function ownedCommand(argv: readonly string[]): readonly string[] {
  const dash = argv.indexOf('--');
  return argv[1]?.endsWith('supervise.py') && dash >= 0 ? argv.slice(dash + 1) : argv;
}

/** The run.json a launch writes before the run's owner starts: "starting", one process, this machine. */
export function startingManifest(runId: string, fields: Partial<RunManifest> = {}): RunManifest {
  return {
    v: 1,
    run_id: runId,
    name: runId,
    created: Date.now() / 1000,
    status: 'starting',
    config: {},
    world: { size: 1 },
    host: os.hostname(),
    target: 'local',
    ...fields,
  };
}
