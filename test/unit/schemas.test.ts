import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { checkMetricsEvent } from '../../core/protocol/metrics';
import { parseRunManifest } from '../../core/protocol/run-manifest';

const root = path.resolve(__dirname, '../..');

describe('protocol schemas', () => {
  it('the committed TypeScript types are generated from the current schemas', function () {
    this.timeout(60_000);
    const r = spawnSync(process.execPath, [path.join(root, 'scripts/gen-types.mjs'), '--check'], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
  });

  it('accepts every event type of DESIGN.md and rejects a missing field by name', () => {
    const plan = { params: 1, grads: 1, optimizer: 2, activations: 3, workspace: 0, comm: 0, other: 0, total: 7 };
    const events = [
      {
        v: 1,
        type: 'run_start',
        time: 1,
        run_id: 'r',
        config: {},
        world: { size: 1, ranks: [{ rank: 0, host: 'h', device: 'cpu' }] },
        memory_plan: plan,
      },
      {
        v: 1,
        type: 'step',
        time: 1,
        step: 1,
        loss: 2.5,
        lr: 1e-3,
        grad_norm: null,
        tokens_per_s: 10,
        step_ms: 5,
        mem_peak: 100,
        rank: 0,
      },
      { v: 1, type: 'eval', time: 1, step: 1, val_loss: 2.4 },
      { v: 1, type: 'checkpoint', time: 1, step: 1, path: 'checkpoints/step-1', bytes: 10 },
      {
        v: 1,
        type: 'anomaly',
        time: 1,
        step: 3,
        kind: 'nan',
        where: { phase: 'forward', layer: 3, op: 'attn.softmax' },
        action: 'stop',
        dump: 'diagnostics/step-3.json',
      },
      { v: 1, type: 'log', time: 1, level: 'info', msg: 'hello' },
      { v: 1, type: 'run_end', time: 1, status: 'completed', step: 10 },
    ];
    for (const e of events) assert.equal(checkMetricsEvent(e), null, JSON.stringify(e));
    assert.match(checkMetricsEvent({ v: 1, type: 'eval', time: 1, step: 1 }) ?? '', /eval event: .*val_loss/);
    assert.match(checkMetricsEvent({ ...events[4], kind: 'boom' }) ?? '', /kind/);
  });

  it('validates run.json manifests', () => {
    const ok = {
      v: 1,
      run_id: '20261121-101500-tiny-ab12',
      created: 1,
      status: 'running',
      config: {},
      world: { size: 2 },
      host: 'box',
    };
    assert.ok('manifest' in parseRunManifest(JSON.stringify(ok)));
    const bad = parseRunManifest(JSON.stringify({ ...ok, status: 'exploded' }));
    assert.ok('error' in bad && /status/.test(bad.error));
    assert.ok('error' in parseRunManifest('{"v":1,'));
  });
});
