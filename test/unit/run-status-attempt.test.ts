import assert from 'node:assert/strict';
import type { MetricsEvent } from '../../core/protocol/metrics';
import type { RunManifest } from '../../core/protocol/run-manifest';
import { RunHistory } from '../../core/runs/run-history';
import { runFactsOf, runStatusOf } from '../../runs/watch/run-status';
import { jobRunStatus } from '../../runs/slurm/slurm-state';

// Issue 41 item 1, in part: run.json names the attempt it is the snapshot of, with where that
// attempt's events begin in metrics.jsonl (attempt.log_from, written by the supervisor as it takes
// the folder). Whether the log's end is that attempt's is then told by the stream's own order —
// not by comparing run.json's `updated` with the end's time (two hosts' clocks) or run.json's pids
// with run_start's (manifestOfEndedAttempt). run.json without an attempt is judged as before.

const T = 1_800_000_000;

/**
 * A log of one attempt that completed: run_start, a step, run_end, as the history reads them; with
 * `attempt`, its start and end name it (as the runtime and the supervisor write them now).
 */
function endedHistory(attempt?: string, opts: { end?: boolean } = {}): RunHistory {
  const history = new RunHistory();
  const events: MetricsEvent[] = [
    {
      v: 1,
      type: 'run_start',
      time: T,
      run_id: 'r',
      config: {},
      world: { size: 1, ranks: [{ rank: 0, host: 'h', device: 'cpu', pid: 4_000_001 }] },
      ...(attempt ? { attempt } : {}),
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
    ...(opts.end === false
      ? []
      : [
          {
            v: 1,
            type: 'run_end',
            time: T + 2,
            status: 'completed',
            step: 1,
            ...(attempt ? { attempt } : {}),
          } as const,
        ]),
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
    // Live, as a resume read by its time is: "running" where the place of the log's latest start is
    // not known (the next case: where it is, the stream has nothing of the resume yet: "starting").
    assert.equal(runStatusOf(facts(resumed)), 'running');
    const { attempt: _b, ...bare } = resumed;
    assert.equal(runStatusOf(facts(bare)), 'completed');
  });

  it('a resume whose start is not in the stream yet is what run.json says of it, starting — not the last attempt running — until its start is', () => {
    const resumed = manifest({ status: 'starting', attempt: { id: 'b', log_from: 900 } });
    // The log's latest start is the last attempt's: by its place (before log_from), or by the id it names.
    assert.equal(runStatusOf({ ...facts(resumed), startOffset: 0 }), 'starting');
    assert.equal(runStatusOf({ ...facts(resumed), history: endedHistory('a') }), 'starting');
    // The resume's start read (run.json, a poll behind, still says starting): running.
    const started = { ...facts(resumed), history: endedHistory('b', { end: false }), endOffset: undefined };
    assert.equal(runStatusOf(started), 'running');
    assert.equal(
      runStatusOf({ ...started, history: endedHistory(undefined, { end: false }), startOffset: 950 }),
      'running',
    );
    // The last attempt's start, no end, and no attempt of its own in the stream: still starting.
    assert.equal(runStatusOf({ ...started, history: endedHistory('a', { end: false }) }), 'starting');
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

// Issue 41 item 1: readers decide by the stream, not the clock — a resume asked for from this
// window, a start after run.json's end, and a SLURM job's start and end, each by the attempt.
describe('the stream, not the clock, across a resume and a SLURM job (runs/watch/run-status.ts)', () => {
  it("a resume's own end, timed by a host whose clock is behind the editor's, is the resume's end, not the last run's", () => {
    // The resume (attempt "a", its first byte before the end) ended at T + 2 by its host's clock; the
    // editor asked for it at T + 60 by its own. Read by the clock the end would be the last run's, and
    // the run would say "starting" for ever.
    const ended = manifest({ status: 'completed', updated: T + 2, attempt: { id: 'a', log_from: 0 } });
    const asked = { askedAt: T + 60 };
    const byStream = { ...facts(ended), resume: { ...asked, attempt: { id: 'a', log_from: 0 } } };
    assert.equal(runStatusOf(byStream), 'completed');
    assert.equal(runStatusOf({ ...facts(ended), resume: asked }), 'starting', 'the clock alone misreads it');
  });

  it("the last run's end, read after a resume asked for by a clock behind it, is the last run's: the resume is starting", () => {
    // run.json still the last run's (the watch read it a poll ago): the resume's attempt begins after the end.
    const last = manifest({ status: 'completed', updated: T + 2, attempt: { id: 'a', log_from: 0 } });
    const resume = { askedAt: T - 30, attempt: { id: 'b', log_from: END_OFFSET + 100 } };
    assert.equal(runStatusOf({ ...facts(last), resume }), 'starting');
    assert.equal(
      runStatusOf({ ...facts(last), resume: { askedAt: T - 30 } }),
      'completed',
      'the clock alone misreads it',
    );
  });

  it("a start naming another attempt than run.json's ended one is a resume running, whatever the clocks say", () => {
    const history = endedHistory('b', { end: false });
    // run.json says the last attempt ("a") completed, written by a clock ahead of the start's.
    const m = manifest({ status: 'completed', updated: T + 50, attempt: { id: 'a', log_from: 0 } });
    const at = { history, manifest: m, job: undefined, vanished: undefined, startOffset: 300 };
    assert.equal(runStatusOf(at), 'running');
    assert.equal(runStatusOf({ ...at, history: endedHistory('a', { end: false }) }), 'completed');
    // Without ids on the start, the clock decides, as it did before attempts were named.
    assert.equal(runStatusOf({ ...at, history: endedHistory(undefined, { end: false }) }), 'completed');
  });

  it("a SLURM job's start and end are its own by the attempt its owner named, not by the controller's clock", () => {
    const m = manifest({ status: 'running', attempt: { id: 'a', log_from: 0 } });
    // The controller's clock 100 s ahead of the node's: by the clock neither the start nor the end is this job's.
    const job = { id: '7', state: 'RUNNING', startTime: T + 100, from: 'squeue' } as const;
    assert.equal(jobRunStatus(job, runFactsOf(endedHistory('a', { end: false }), m)), 'running');
    assert.equal(jobRunStatus(job, runFactsOf(endedHistory('a'), m)), 'completed');
    assert.equal(jobRunStatus(job, runFactsOf(endedHistory('a'))), 'starting', 'the clock alone misreads it');
    // Requeued: the new job's owner named attempt "b"; the log's start and end are the last job's.
    const requeued = manifest({ status: 'starting', attempt: { id: 'b', log_from: END_OFFSET + 100 } });
    const early = { id: '7', state: 'RUNNING', startTime: T - 100, from: 'squeue' } as const;
    assert.equal(jobRunStatus(early, runFactsOf(endedHistory('a'), requeued)), 'starting');
    assert.equal(jobRunStatus(early, runFactsOf(endedHistory('a'))), 'completed', 'the clock alone misreads it');
  });
});
