// Runs named together are told apart: by start time when they share a title, by id when they share that too.
import assert from 'node:assert/strict';
import { distinctNames } from '../../core/runs/run-names';

describe('run names told apart (core/runs/run-names.ts)', () => {
  const at = (ms: number) => `t${ms}`;

  it('leaves a title no other run has alone, and adds the start time to titles two runs share', () => {
    const names = distinctNames(
      [
        { title: 'tiny-cpu', startedAt: 1, id: 'a' },
        { title: 'tiny-cpu', startedAt: 2, id: 'b' },
        { title: 'ddp', startedAt: 3, id: 'c' },
      ],
      at,
    );
    assert.deepEqual(names, ['tiny-cpu · t1', 'tiny-cpu · t2', 'ddp']);
  });

  it('adds the run id where the start times are shared too, or unknown', () => {
    const names = distinctNames(
      [
        { title: 'x', startedAt: 5, id: 'run-1' },
        { title: 'x', startedAt: 5, id: 'run-2' },
        { title: 'y', id: 'run-3' },
        { title: 'y', id: 'run-4' },
      ],
      at,
    );
    assert.deepEqual(names, ['x · t5 · run-1', 'x · t5 · run-2', 'y · run-3', 'y · run-4']);
  });

  it('formats the start with seconds by default', () => {
    const [a] = distinctNames([
      { title: 'x', startedAt: Date.UTC(2026, 10, 26, 1, 5, 12), id: 'a' },
      { title: 'x', startedAt: 0, id: 'b' },
    ]);
    assert.match(a, /^x · .*\d{2}:\d{2}:\d{2}/);
  });
});
