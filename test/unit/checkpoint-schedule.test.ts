import assert from 'node:assert/strict';
import { checkpointExpectedAfter } from '../../core/runs/checkpoint-schedule';

describe('when the trainer saves a checkpoint (core/runs/checkpoint-schedule.ts)', () => {
  const config = { training: { max_steps: 150 }, checkpointing: { save_every_n_steps: 50, save_final: true } };
  it('every save_every_n_steps steps and at the end', () => {
    assert.deepEqual(
      [1, 49, 50, 51, 100, 149, 150].filter((s) => checkpointExpectedAfter(s, config)),
      [50, 100, 150],
    );
  });
  it('at the end only when some checkpointing is on; on a stop likewise', () => {
    const none = { training: { max_steps: 10 }, checkpointing: { save_every_n_steps: 0, save_final: false } };
    assert.equal(checkpointExpectedAfter(10, none), false);
    assert.equal(checkpointExpectedAfter(3, none, true), false);
    assert.equal(checkpointExpectedAfter(10, { training: { max_steps: 10 } }), true, 'save_final defaults to true');
    assert.equal(checkpointExpectedAfter(3, { training: { max_steps: 10 } }, true), true);
    assert.equal(checkpointExpectedAfter(3, undefined), false);
  });
});
