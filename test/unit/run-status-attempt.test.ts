import assert from 'node:assert/strict';
import type { MetricsEvent } from '../../core/protocol/metrics';
import type { RunManifest } from '../../core/protocol/run-manifest';
import { RunHistory } from '../../core/runs/run-history';
import { runStatusOf } from '../../runs/watch/run-status';

// Issue 41 item 1, in part: run.json names the attempt it is the snapshot of, with where that
// attempt's events begin in metrics.jsonl (attempt.log_from, written by the supervisor as it takes
// the folder). Whether the log's end is that attempt's is then told by the stream's own order —
// not by comparing run.json's `updated` with the end's time (two hosts' clocks) or run.json's pids
// with run_start's (manifestOfEndedAttempt). run.json without an attempt is judged as before.

const T = 1_800_000_000;

/** A log of one attempt that completed: run_start, a step, run_end, as the history reads them. */
function endedHistory(): RunHistory {
  const history = new RunHistory();
  const events: MetricsEvent[] = [
    {
      v: 1,
      type: 'run_start',
      time: T,
      run_id: 'r',
      config: {},
      world: { size: 1, ranks: [{ rank: 0, host: 'h', device: 'cpu', pid: 4_000_001 }] },
    },
    {
      v: 1,
      type: 'step',
      time: T + 1,
      step: 1,
      loss: 2,
      lr: 1e-3,
      grad_norm: 1,
      tokens_per_s: 1,
      step_ms: 1,
      mem_peak: 1,
    },
    { v: 1, type: 'run_end', time: T + 2, status: 'completed', step: 1 },
  ];
  for (const e of events) history.apply(e);
  return history;
}

/** Where that run_end begins in metrics.jsonl (bytes). */
const END_OFFSET = 600;

function manifest(fields: Partial<RunManifest>): RunManifest {
  return {
    v: 1,
    run_id: 'r',
    created: T - 5,
    status: 'running',
    config: {},
    world: { size: 1 },
    host: 'h',
    ...fields,
  };
}

const facts = (m: RunManifest) => ({
  history: endedHistory(),
  manifest: m,
  job: undefined,
  vanished: undefined,
  resumedAt: -Infinity,
  endOffset: END_OFFSET,
});

describe('whose end the log holds, by the attempt run.json names (runs/watch/run-status.ts)', () => {
  it("run.json of the attempt that wrote the end, a poll behind it (still running, written later, naming no pid of the run_start's), is that attempt ended", () => {
    const behind = manifest({
      status: 'running',
      updated: T + 2.05,
      pids: [4_000_000],
      attempt: { id: 'a', log_from: 0 },
    });
    assert.equal(runStatusOf(facts(behind)), 'completed');
    // Without the attempt the same run.json reads as a resume: nothing in it ties it to the end.
    const { attempt: _a, ...bare } = behind;
    assert.equal(runStatusOf(facts(bare)), 'running');
  });

  it("a resume's run.json, its attempt begun after the end, makes the run live again, even when written by a clock behind the end's", () => {
    // Its host's clock 30 s behind the one that timed the end: the times say the end came after it.
    const resumed = manifest({
      status: 'starting',
      updated: T - 28,
      pids: [4_000_002],
      attempt: { id: 'b', log_from: 900 },
    });
    // Live, as a resume read by its time is: "running" while the log's latest start is the last attempt's.
    assert.equal(runStatusOf(facts(resumed)), 'running');
    const { attempt: _b, ...bare } = resumed;
    assert.equal(runStatusOf(facts(bare)), 'completed');
  });

  it('an end at the very byte where the attempt begins is that attempt’s; one byte before it an earlier one’s', () => {
    assert.equal(
      runStatusOf(facts(manifest({ status: 'running', attempt: { id: 'a', log_from: END_OFFSET } }))),
      'completed',
    );
    assert.equal(
      runStatusOf(facts(manifest({ status: 'running', attempt: { id: 'b', log_from: END_OFFSET + 1 } }))),
      'running',
    );
  });
});
