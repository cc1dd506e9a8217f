// When the trainer saves a checkpoint, read from its resolved config the way the trainer decides
// (native/src/train/trainer.cc): every save_every_n_steps steps, at the end when any
// checkpointing is on, and when it is stopped. Saves by the minute are not predictable here.

interface CheckpointingShape {
  training?: { max_steps?: number };
  checkpointing?: { save_every_n_steps?: number; save_every_minutes?: number; save_final?: boolean };
}

/** Whether the trainer saves a checkpoint right after `step` (`stopping`: a stop was asked for). */
export function checkpointExpectedAfter(step: number, config: unknown, stopping = false): boolean {
  const c = (config ?? {}) as CheckpointingShape;
  const every = c.checkpointing?.save_every_n_steps ?? 0;
  const minutes = c.checkpointing?.save_every_minutes ?? 0;
  const anySaving = c.checkpointing?.save_final !== false || every > 0 || minutes > 0;
  if (every > 0 && step > 0 && step % every === 0) return true;
  return anySaving && (stopping || (c.training?.max_steps !== undefined && step >= c.training.max_steps));
}
