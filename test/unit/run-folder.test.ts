import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  latestRunOf,
  markEndedWithoutRunEnd,
  newRunId,
  startingManifest,
  writeStartingManifest,
  type RunFacts,
} from '../../runs/folder/run-folder';
import { parseRunManifest } from '../../core/protocol/run-manifest';

const facts = (over: Partial<RunFacts> = {}): RunFacts => ({
  runId: 'r-1',
  name: 'r',
  config: { a: 1 },
  world: { size: 2 },
  host: 'h',
  target: 'local',
  command: ['python3', 'train.py'],
  ...over,
});

describe('run folders: one maker of run ids and run.json', () => {
  it('names runs by name and UTC time, safe as a folder name and unique across quick relaunches', () => {
    assert.match(newRunId('my run; $(x)', new Date('2026-11-21T15:30:12Z')), /^my-run-x-20261121-153012-[0-9a-f]{4}$/);
    assert.match(newRunId('../..'), /^run-\d{8}-\d{6}-[0-9a-f]{4}$/);
    const ids = new Set(Array.from({ length: 50 }, () => newRunId('a', new Date(0))));
    assert.ok(ids.size > 40, 'random suffixes differ');
  });

  it('a relaunch in the same folder keeps the run id and creation time and forgets the old end', () => {
    const first = startingManifest(facts({ kind: 'command', logs: { tensorboard: '/tb' } }), undefined, 100);
    assert.equal(first.status, 'starting');
    assert.equal(first.kind, 'command');
    const ended = { ...first, status: 'failed' as const, end_reason: 'boom', pgid: 5 };
    const again = startingManifest(facts({ runId: 'other', command: ['x'] }), ended, 200);
    assert.equal(again.run_id, 'r-1');
    assert.equal(again.created, 100);
    assert.equal(again.updated, 200);
    assert.equal(again.status, 'starting');
    assert.equal(again.end_reason, undefined);
    assert.deepEqual(again.command, ['x']);
    assert.equal(again.pgid, undefined, "the last run's process group is not this one's");
  });

  it("fsdp-train, exec'd by the detached start as the group leader, keeps the leader record that names it", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-folder-'));
    try {
      const started = {
        ...startingManifest(facts(), undefined, 100),
        pids: [process.pid],
        pgid: process.pid,
        leader_start: 1234,
        boot_id: 'b',
      };
      writeFileSync(path.join(dir, 'run.json'), JSON.stringify(started));
      const kept = writeStartingManifest(dir, facts());
      assert.deepEqual([kept.pgid, kept.leader_start, kept.boot_id], [process.pid, 1234, 'b']);
      // Another process's group (a previous run's): not inherited.
      writeFileSync(path.join(dir, 'run.json'), JSON.stringify({ ...started, pgid: process.pid + 1 }));
      const fresh = writeStartingManifest(dir, facts());
      assert.deepEqual([fresh.pgid, fresh.leader_start, fresh.boot_id], [undefined, undefined, undefined]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('writes a run.json that the schema accepts, finds the latest run of a name, and marks a silent end failed', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-folder-'));
    try {
      const a = path.join(dir, 'a');
      const b = path.join(dir, 'b');
      writeStartingManifest(a, facts({ runId: 'a' }));
      await new Promise((r) => setTimeout(r, 20));
      writeStartingManifest(b, facts({ runId: 'b' }));
      const parsed = parseRunManifest(readFileSync(path.join(b, 'run.json'), 'utf8'));
      assert.ok('manifest' in parsed, JSON.stringify(parsed));
      assert.deepEqual(parsed.manifest.pids, [process.pid]);
      assert.equal(latestRunOf(dir, 'r'), b);
      markEndedWithoutRunEnd(b, 'killed');
      const m = JSON.parse(readFileSync(path.join(b, 'run.json'), 'utf8'));
      assert.equal(m.status, 'failed');
      assert.equal(m.end_reason, 'killed');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
