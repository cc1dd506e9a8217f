// A finished run with N steps written at once (test data for the 1M-point benchmark): the same
// events the trainer writes, to the protocol's schema, produced with a buffered stream.
import { createWriteStream, mkdirSync } from 'node:fs';
import path from 'node:path';
import { syntheticLoss } from '../../test/harness/synthetic-run';
import { writeManifestOn } from '../../runs/folder/run-folder';
import { localLoginHost } from '../../runs/machines/login-host';
import { COMPANION_DIR } from '../../runs/runtime/remote-companion';

export async function writeBigRun(runDir: string, steps: number): Promise<void> {
  mkdirSync(runDir, { recursive: true });
  const t0 = Date.now() / 1000 - steps * 0.01;
  const plan = { params: 1, grads: 1, optimizer: 2, activations: 3, workspace: 0, comm: 0, other: 0, total: 7 };
  const out = createWriteStream(path.join(runDir, 'metrics.jsonl'));
  const write = (e: object) =>
    out.write(`${JSON.stringify({ v: 1, ...e })}\n`)
      ? undefined
      : new Promise<void>((r) => out.once('drain', () => r()));
  await write({
    type: 'run_start',
    time: t0,
    run_id: path.basename(runDir),
    config: { name: 'big', training: { max_steps: steps } },
    world: { size: 1, ranks: [{ rank: 0, host: 'h', device: 'cpu' }] },
    memory_plan: plan,
  });
  for (let s = 1; s <= steps; s++) {
    const time = t0 + s * 0.01;
    await write({
      type: 'step',
      time,
      step: s,
      loss: syntheticLoss(s / 1000),
      lr: 1e-3,
      grad_norm: 1 + Math.sin(s / 5000),
      tokens_per_s: 10000 + (s % 997),
      step_ms: 10,
      mem_peak: 3.7e7 + (s % 13) * 1e5,
      mfu: 0.3 + 0.01 * Math.sin(s / 777),
    });
    if (s % 1000 === 0) await write({ type: 'eval', time, step: s, val_loss: syntheticLoss(s / 1000) + 0.1 });
    if (s % 50_000 === 0) await write({ type: 'checkpoint', time, step: s, path: `checkpoints/step-${s}`, bytes: 1e8 });
  }
  await write({ type: 'run_end', time: t0 + steps * 0.01, status: 'completed', step: steps });
  await new Promise<void>((resolve) => out.end(resolve));
  // run.json through its one writer (python/fsdp_studio/run_manifest.py), as a SLURM login host writes one.
  await writeManifestOn(localLoginHost(), path.resolve(__dirname, '..', '..', COMPANION_DIR), runDir, {
    v: 1,
    run_id: path.basename(runDir),
    name: 'big',
    created: t0,
    status: 'completed',
    step: steps,
    max_steps: steps,
    config: {},
    world: { size: 1 },
    host: 'h',
    target: 'local',
  });
}
