import assert from 'node:assert/strict';
import {
  FIELD_SEPARATOR,
  GONE,
  jobActive,
  jobReason,
  jobRunStatus,
  parseSacct,
  parseSqueue,
  type SlurmJob,
} from '../../runs/slurm/slurm-state';
import { timeLimitSeconds } from '../../core/config/sbatch-options';
import { partitionInfo } from '../../runs/slurm/slurm-cluster';

const row = (...fields: string[]) => fields.join(FIELD_SEPARATOR);
const job = (state: string, extra: Partial<SlurmJob> = {}): SlurmJob => ({ id: '42', state, from: 'squeue', ...extra });

describe('SLURM job states', () => {
  it('reads squeue rows: epoch times, no reason for None, names with any characters', () => {
    const out = [
      row('42', 'PENDING', 'Resources', '1795440000', '1795443600', '/runs/r 1', 'name|with\x1fodd #chars'),
      row('43', 'RUNNING', 'None', '1795430000', 'N/A', '/runs/r2', 'x'),
      'garbage',
    ].join('\n');
    const [a, b, ...rest] = parseSqueue(out);
    assert.deepEqual(a, {
      id: '42',
      state: 'PENDING',
      reason: 'Resources',
      startTime: 1795440000,
      endTime: 1795443600,
      workDir: '/runs/r 1',
      name: 'name|with\x1fodd #chars',
      from: 'squeue',
    });
    assert.deepEqual(b, {
      id: '43',
      state: 'RUNNING',
      startTime: 1795430000,
      workDir: '/runs/r2',
      name: 'x',
      from: 'squeue',
    });
    assert.equal(rest.length, 0);
  });

  it('reads sacct rows: the state word of "CANCELLED by 0", the exit code', () => {
    const [a] = parseSacct('42|CANCELLED by 0|None|1795430000|1795430100|0:15|/runs/r|my|job\n');
    assert.deepEqual(a, {
      id: '42',
      state: 'CANCELLED',
      startTime: 1795430000,
      endTime: 1795430100,
      exitCode: '0:15',
      workDir: '/runs/r',
      name: 'my|job',
      from: 'sacct',
    });
  });

  it('a waiting job is queued, with the reason and the expected start in words', () => {
    const now = new Date(2026, 10, 23, 12, 0, 0).getTime() / 1000;
    const j = job('PENDING', { reason: 'Resources', startTime: now + 600 });
    assert.equal(jobRunStatus(j, {}), 'queued');
    assert.equal(jobReason(j, 'queued', now), 'job 42 queued: waiting for resources; expected to start at 12:10');
    assert.equal(
      jobRunStatus(job('REQUEUED'), { end: { status: 'stopped', time: 10 } }),
      'queued',
      'a requeued job is queued again, whatever the last run_end said',
    );
    assert.ok(jobActive(job('PENDING')) && jobActive(job('COMPLETING')) && !jobActive(job('TIMEOUT')));
  });

  it('a running job: starting until its trainer writes run_start, running after; an older run_end belongs to an earlier job', () => {
    const started = 1000;
    assert.equal(jobRunStatus(job('RUNNING', { startTime: started }), {}), 'starting');
    assert.equal(jobRunStatus(job('RUNNING', { startTime: started }), { startedAt: started + 3 }), 'running');
    // A requeued job runs again: the previous job's run_start and run_end are before its start.
    assert.equal(
      jobRunStatus(job('RUNNING', { startTime: started }), { startedAt: 500, end: { status: 'stopped', time: 600 } }),
      'starting',
    );
    // A job resumed seconds after the last one ended (squeue's start is whole seconds): the end is
    // within the clock slack of its start, but the start before that end is an earlier job's.
    assert.equal(
      jobRunStatus(job('RUNNING', { startTime: started }), {
        startedAt: started - 9,
        end: { status: 'completed', time: started - 1.3 },
      }),
      'starting',
    );
    // The trainer of this job stopped; the job is winding down.
    assert.equal(
      jobRunStatus(job('COMPLETING', { startTime: started }), {
        startedAt: started + 3,
        end: { status: 'stopped', time: started + 60 },
      }),
      'stopped',
    );
  });

  it("an ended job says what the trainer could not: cancelled, timed out, preempted, node failure; otherwise the trainer's own end", () => {
    const end = { status: 'stopped' as const, time: 2000 };
    assert.equal(jobRunStatus(job('CANCELLED', { startTime: 1000 }), { end }), 'cancelled');
    assert.equal(jobRunStatus(job('TIMEOUT'), {}), 'timed-out');
    assert.equal(jobRunStatus(job('PREEMPTED'), {}), 'preempted');
    assert.equal(jobRunStatus(job('NODE_FAIL'), { end: { status: 'completed', time: 2000 } }), 'failed');
    assert.equal(
      jobRunStatus(job('FAILED', { startTime: 1000 }), { end }),
      'stopped',
      'a graceful stop exits non-zero: the trainer said stopped',
    );
    assert.equal(
      jobRunStatus(job('FAILED', { startTime: 3000 }), { end }),
      'failed',
      'a run_end of an earlier job does not explain this one',
    );
    assert.equal(
      jobRunStatus(job('COMPLETED', { startTime: 1000 }), { end: { status: 'completed', time: 2000 } }),
      'completed',
    );
    assert.equal(jobRunStatus(job('COMPLETED'), {}), 'failed', 'a job that ended without a run_end');
    assert.equal(jobRunStatus(job(GONE), { end: { status: 'completed', time: 1 } }), 'completed');
    assert.match(jobReason(job('CANCELLED'), 'cancelled')!, /job 42 was cancelled/);
    assert.match(jobReason(job('TIMEOUT'), 'timed-out')!, /time limit/);
    assert.match(jobReason(job(GONE), 'failed')!, /no longer known to SLURM/);
    assert.equal(jobReason(job('COMPLETED'), 'completed'), undefined);
  });

  it('reads Slurm time limits in every form it accepts', () => {
    assert.equal(timeLimitSeconds(90), 5400);
    assert.equal(timeLimitSeconds('30'), 1800);
    assert.equal(timeLimitSeconds('2:30'), 150);
    assert.equal(timeLimitSeconds('04:00:00'), 14400);
    assert.equal(timeLimitSeconds('1-12'), 129600);
    assert.equal(timeLimitSeconds('1-00:30'), 88200);
    assert.equal(timeLimitSeconds('2-01:00:05'), 176405);
    assert.equal(timeLimitSeconds('UNLIMITED'), undefined);
    assert.equal(timeLimitSeconds(undefined), undefined);
  });

  it("reads a partition's GPUs, memory and cores from sinfo", () => {
    assert.deepEqual(partitionInfo(['gpu*', 'gpu:h100:8(S:0-1)', '1031000', '112']), {
      name: 'gpu',
      gpuType: 'h100',
      gpusPerNode: 8,
      memoryBytes: 1031000 * 2 ** 20,
      cpusPerNode: 112,
    });
    assert.deepEqual(partitionInfo(['a100', 'gpu:a100_80g:4,shard:8', '512000+', '64']), {
      name: 'a100',
      gpuType: 'a100_80g',
      gpusPerNode: 4,
      memoryBytes: 512000 * 2 ** 20,
      cpusPerNode: 64,
    });
    assert.deepEqual(
      partitionInfo(['cpu', '(null)', '1', '4']),
      { name: 'cpu', cpusPerNode: 4 },
      'a node without configured memory reports 1 MB: unknown',
    );
    assert.deepEqual(partitionInfo(['g', 'gpu:2', '1000', '8']).gpusPerNode, 2);
  });
});
