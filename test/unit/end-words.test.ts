// The toasts' words (issue 39, item 5): a run's end at the step and loss the dashboard shows, and
// Stop's promise of a checkpoint only for runs that save one.
import assert from 'node:assert/strict';
import { completedWords, endStep, stoppingWords } from '../../core/runs/end-words';
import { RunHistory } from '../../core/runs/run-history';
import type { MetricsEvent } from '../../core/protocol/metrics';

/** A Hugging Face Trainer run as the watch reads it: TensorBoard's train/loss every 10 steps to 60. */
function trainerRun(): RunHistory {
  const h = new RunHistory();
  for (let step = 10; step <= 60; step += 10)
    h.applyScalar('train/loss', step, 3 - step / 100, step, undefined, { source: 'tensorboard' });
  return h;
}

describe("the toasts' words", () => {
  it("a command's end (run_end step 0: its supervisor does not know the step) is told at the dashboard's step and loss", () => {
    const h = trainerRun();
    assert.equal(h.lastStep, 60, "the dashboard's step");
    assert.equal(endStep(0, h), 60);
    assert.equal(completedWords('clm', 0, h), 'clm completed at step 60, loss 2.400.');
    // Nothing charted: run_end's own step.
    assert.equal(endStep(0, new RunHistory()), 0);
    assert.equal(completedWords('x', 7, new RunHistory()), 'x completed at step 7.');
  });

  it("Stop promises a checkpoint for our runtime's run, not for a person's command; names the command's last one", () => {
    const h = trainerRun();
    assert.match(
      stoppingWords('tiny', { command: false, config: { checkpointing: {} }, history: h }).title,
      /finishing the step and saving a checkpoint/,
    );
    // A native run whose config turned saving off saves nothing when stopped.
    assert.doesNotMatch(
      stoppingWords('tiny', { command: false, config: { checkpointing: { save_final: false } }, history: h }).title,
      /checkpoint/,
    );
    const command = stoppingWords('clm', { command: true, config: { command: ['torchrun'] }, history: h });
    assert.equal(command.title, 'Stopping clm: asked to end (SIGTERM)…');
    assert.doesNotMatch(command.killNow, /checkpoint/);
    const saved: MetricsEvent = {
      v: 1,
      type: 'checkpoint',
      time: 61,
      step: 50,
      path: 'ckpt/50',
      bytes: 1024,
    } as MetricsEvent;
    h.apply(saved);
    assert.equal(
      stoppingWords('clm', { command: true, config: {}, history: h }).title,
      'Stopping clm: asked to end (SIGTERM); its last checkpoint is at step 50…',
    );
  });
});
