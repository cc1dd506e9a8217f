import assert from 'node:assert/strict';
import type { AnomalyEvent } from '../../core/protocol/metrics';
import { anomalyView, dumpTables, fixEdit, fixesFor } from '../../core/runs/anomaly-report';

const nan: AnomalyEvent = { v: 1, type: 'anomaly', time: 1, step: 57, kind: 'nan', where: { phase: 'forward', layer: 2, op: 'attn.softmax' }, action: 'stop', dump: 'diagnostics/step-00000057-nan.json' };
const stat = (layer: number | string, op: string, maxAbs: number | null, nonfinite: number) => ({ phase: 'forward', kind: 'activation', layer, op, name: `${op}.out`, mean: 0, std: 1, max_abs: maxAbs, nonfinite });

describe('anomaly report', () => {
  it("reads the runtime's dump: per-op statistics with the named op highlighted, and the batch as text for byte-level data", () => {
    const dump = { format: 'fsdp-studio-nan-dump', version: 1, step: 57, tokens: [[72, 105, 10, 0]], stats: [stat('embedding', 'embed', 1, 0), stat(2, 'attn.scores', 9e9, 3), stat(2, 'attn.softmax', null, 12)] };
    const view = anomalyView(nan, dump, undefined, { model: { vocab_size: 256 }, training: { learning_rate: 0.003, max_grad_norm: 1 } });
    assert.equal(view.summary, 'NaN in forward, layer 2 (attn.softmax); run stopped');
    const [stats, batch] = view.tables;
    assert.equal(stats.highlightRow, 2, 'the op the anomaly names, not the first with non-finite values');
    assert.equal(stats.chartColumn, 'max_abs');
    assert.deepEqual(stats.rows[1].slice(2, 4), [2, 'attn.scores']);
    assert.deepEqual(batch.rows[0], [0, 4, '72 105 10 0', 'Hi⏎·']);
    assert.match(view.policy, /stopped/);
  });

  it('shows a dump of unknown shape as tables of its records and fields', () => {
    const tables = dumpTables({ step: 3, layers: [{ layer: 0, rms: 1 }, { layer: 2, rms: Infinity }], batch: { offset: 4096, ids: [1, 2, 3] } }, 2);
    assert.deepEqual(tables.map((t) => t.title), ['dump', 'layers', 'batch']);
    assert.equal(tables[1].highlightRow, 1);
    assert.equal(tables[1].chartColumn, 'rms');
    assert.deepEqual(tables[2].rows, [['offset', 4096], ['ids', '[1, 2, 3]']]);
  });

  it('offers the fixes that apply to the config, each with its edit', () => {
    const config = { training: { learning_rate: 0.004, max_grad_norm: 0 }, mixed_precision: { param_dtype: 'float16' }, stability: { on_nan: 'stop' } };
    const fixes = fixesFor(nan, config);
    assert.deepEqual(fixes.map((f) => f.id), ['lower_lr', 'clip', 'bf16', 'rollback_policy', 'check_data']);
    assert.deepEqual(fixEdit('lower_lr', config), { path: ['training', 'learning_rate'], value: 0.002 });
    assert.deepEqual(fixEdit('bf16', config), { path: ['mixed_precision', 'param_dtype'], value: 'bfloat16' });
    assert.equal(fixEdit('check_data', config), undefined);
    const tidy = fixesFor(nan, { training: { learning_rate: 0.001, max_grad_norm: 1 }, mixed_precision: { param_dtype: 'bfloat16' }, stability: { on_nan: 'rollback' } });
    assert.deepEqual(tidy.map((f) => f.id), ['lower_lr', 'check_data']);
  });
});
