// fsdp-train's look at the run-folder lock (native/src/run_folder/run_folder_lock.h) before it writes
// config.json and run.json: a folder another trainer holds is refused here, naming the holder,
// before anything of the running run is overwritten. The lock itself belongs to the trainer, the
// process that writes the checkpoints: it takes it as it starts and holds it for its whole life,
// so it outlives nothing and nothing outlives it (a killed fsdp-train leaves it with the trainer).
// Node has no flock, so the runtime locks a file this process opened (`--lock-run-folder 3 PID`);
// the lock is let go as soon as the answer is in.
import { spawnSync } from 'node:child_process';
import { closeSync, constants } from 'node:fs';
import path from 'node:path';
import { openRegularFileForWriting } from '../../core/protocol/regular-file';

/** Why runDir (which must exist) is in use by another trainer, or undefined when it is free now. */
export function runFolderInUse(nativeTrainer: string, runDir: string): string | undefined {
  const file = path.join(runDir, 'run.lock');
  // A link, a FIFO or a folder named run.lock is refused by name, not locked through.
  const fd = openRegularFileForWriting(file, constants.O_RDWR | constants.O_CREAT);
  try {
    const r = spawnSync(nativeTrainer, ['--lock-run-folder', '3', String(process.pid)], {
      stdio: ['ignore', 'pipe', 'pipe', fd],
      encoding: 'utf8',
      env: { ...process.env, OMP_WAIT_POLICY: process.env.OMP_WAIT_POLICY ?? 'passive' },
      timeout: 60_000,
    });
    if (r.status === 0) return undefined; // free: closing fd below lets the trainer take it
    if (r.status === 3) {
      return `${runDir} is in use by another trainer: ${r.stdout.trim()} holds ${file}. Two trainers on one run folder destroy each other's checkpoints: wait for it to end, stop it, or use another --run-dir`;
    }
    return `cannot lock ${file}: ${r.stderr.trim() || r.error?.message || `exit ${r.status}`}`;
  } finally {
    closeSync(fd);
  }
}
