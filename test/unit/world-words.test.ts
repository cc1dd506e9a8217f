// The world of a person's command in the words the dashboard's header and the start toast share
// (issue 39 item 3): the command's count, the ranks that started (the supervisor's count in run.json),
// what decides it before they start (deepspeed without --num_gpus), and ranks the events named.
import assert from 'node:assert/strict';
import { RunHistory } from '../../core/runs/run-history';
import { worldLine, worldWords } from '../../core/runs/world-words';

describe("a command's world in words", () => {
  it("the command's own count, as run.json has it", () => {
    assert.equal(worldLine(worldWords({ size: 2, nproc_per_node: 2 }, ['torchrun']), 'torchrun'), '2 ranks (torchrun)');
    assert.equal(worldLine(worldWords({ size: 1 }, ['python', 'train.py']), 'python'), '1 rank (python)');
  });

  it('the ranks that started, when the supervisor counted them into run.json, with the command’s count', () => {
    const line = worldLine(
      worldWords({ size: 2, counted: 'ranks', command_size: 1 }, ['torchrun', 'train.py']),
      'torchrun',
    );
    assert.equal(line, '2 ranks (torchrun; counted from the ranks that started; the command says 1)');
    assert.equal(
      worldLine(worldWords({ size: 8, counted: 'ranks' }, ['deepspeed', 'train.py']), 'deepspeed'),
      '8 ranks (deepspeed; counted from the ranks that started)',
    );
  });

  it('deepspeed without --num_gpus before its ranks start: all GPUs of the host, not 1', () => {
    const words = worldWords({ size: 1, counted: 'launcher' }, ['deepspeed', 'train.py', '--deepspeed', 'ds.json']);
    assert.equal(worldLine(words, 'deepspeed'), 'all GPUs of the host (deepspeed; counted when the ranks report)');
    assert.equal(
      worldWords({ size: 1, counted: 'launcher' }, ['torchrun', '--nproc_per_node', 'auto', 'train.py']).count,
      "torchrun's --nproc_per_node auto",
    );
    // Once the run's events name ranks, those.
    assert.equal(worldWords({ size: 1, counted: 'launcher' }, ['deepspeed', 'train.py'], 4).count, '4 ranks');
  });

  it("more ranks in the run's events than run.json says: those, saying where the number comes from", () => {
    const history = new RunHistory();
    for (const rank of [0, 1, 2])
      history.apply({
        v: 1,
        type: 'step',
        time: 1,
        step: 1,
        rank,
        loss: 2,
        lr: 1e-3,
        grad_norm: 1,
        tokens_per_s: 1,
        step_ms: 1,
        mem_peak: 1,
      });
    assert.equal(history.ranksReported.size, 3);
    assert.equal(
      worldLine(worldWords({ size: 1 }, ['torchrun', 'train.py'], history.ranksReported.size), 'torchrun'),
      '3 ranks (torchrun; counted from the ranks that reported; the command says 1)',
    );
    // Fewer than the command's count (ranks still starting, or one that logs nothing): the command's.
    assert.equal(worldWords({ size: 4 }, ['torchrun'], 3).count, '4 ranks');
  });
});
