import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  latestRunOf,
  manifestWriterPath,
  newRunId,
  startingManifest,
  writeManifestOn,
  type RunFacts,
} from '../../runs/folder/run-folder';
import { localLoginHost } from '../../runs/machines/login-host';
import { COMPANION_DIR } from '../../runs/runtime/remote-companion';
import { parseRunManifest } from '../../core/protocol/run-manifest';

const repoRoot = path.resolve(__dirname, '../..');

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

describe('run folders: one maker of run ids and starting manifests, one writer of run.json', () => {
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

  it('writes run.json only through the one writer (run_manifest.py): schema-valid, the latest run of a name, a silent end marked failed once', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-folder-'));
    const companion = path.join(repoRoot, COMPANION_DIR);
    const host = localLoginHost();
    try {
      const a = path.join(dir, 'a');
      const b = path.join(dir, 'b');
      // b is the later run by its created time, given rather than waited for.
      const now = Date.now() / 1000;
      await writeManifestOn(host, companion, a, startingManifest(facts({ runId: 'a' }), undefined, now - 1));
      await writeManifestOn(host, companion, b, startingManifest(facts({ runId: 'b' }), undefined, now));
      const parsed = parseRunManifest(readFileSync(path.join(b, 'run.json'), 'utf8'));
      assert.ok('manifest' in parsed, JSON.stringify(parsed));
      assert.equal(parsed.manifest.status, 'starting');
      assert.equal(latestRunOf(dir, 'r'), b);
      const markFailed = (reason: string) =>
        spawnSync('python3', [manifestWriterPath(companion), 'mark-failed', b, reason], { encoding: 'utf8' });
      assert.equal(markFailed('killed').status, 0);
      const m = JSON.parse(readFileSync(path.join(b, 'run.json'), 'utf8'));
      assert.equal(m.status, 'failed');
      assert.equal(m.end_reason, 'killed');
      markFailed('again');
      assert.equal(
        JSON.parse(readFileSync(path.join(b, 'run.json'), 'utf8')).end_reason,
        'killed',
        'an ended run keeps its end',
      );
      const refused = spawnSync('python3', [manifestWriterPath(companion), 'write', a], {
        input: '[1]',
        encoding: 'utf8',
      });
      assert.equal(refused.status, 2);
      assert.match(refused.stderr, /not a JSON object/);
      await assert.rejects(
        writeManifestOn(host, companion, path.join(dir, 'x'), startingManifest(facts({ runId: 'x' }))).then(() =>
          writeManifestOn(host, path.join(dir, 'no-companion'), b, startingManifest(facts())),
        ),
        /run\.json failed/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
