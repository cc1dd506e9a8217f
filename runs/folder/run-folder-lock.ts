// fsdp-train's side of the run-folder lock (native/src/run_folder/run_folder_lock.h): taken before
// config.json and run.json are written, held until this process ends. Node has no flock, so the
// runtime locks the lock file this process opened (`--lock-run-folder 3 PID`); the lock belongs to
// the open file, which stays open here for the run's life, and the runtime started next finds it
// held by its ancestor.
import { spawnSync } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';
import path from 'node:path';

/** Locks runDir (which must exist) for this process; the reason it cannot, or undefined when locked. */
export function lockRunFolder(nativeTrainer: string, runDir: string): string | undefined {
  const file = path.join(runDir, 'run.lock');
  const fd = openSync(file, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o644);
  const r = spawnSync(nativeTrainer, ['--lock-run-folder', '3', String(process.pid)], {
    stdio: ['ignore', 'pipe', 'pipe', fd],
    encoding: 'utf8',
    env: { ...process.env, OMP_WAIT_POLICY: process.env.OMP_WAIT_POLICY ?? 'passive' },
    timeout: 60_000,
  });
  if (r.status === 0) return undefined; // fd stays open: the lock lasts as long as this process
  closeSync(fd);
  if (r.status === 3) {
    return `${runDir} is in use by another trainer: ${r.stdout.trim()} holds ${file}. Two trainers on one run folder destroy each other's checkpoints: wait for it to end, stop it, or use another --run-dir`;
  }
  return `cannot lock ${file}: ${r.stderr.trim() || r.error?.message || `exit ${r.status}`}`;
}
