import assert from 'node:assert/strict';
import type { AnomalyEvent } from '../../core/protocol/metrics';
import { anomalyView, dumpTables, fixEdit, fixesFor } from '../../core/runs/anomaly-report';
import { adviceContext, nativeAdvice } from '../../core/runs/run-advice';

const nan: AnomalyEvent = {
  v: 1,
  type: 'anomaly',
  time: 1,
  step: 57,
  kind: 'nan',
  where: { phase: 'forward', layer: 2, op: 'attn.softmax' },
  action: 'stop',
  dump: 'diagnostics/step-00000057-nan.json',
};
const stat = (layer: number | string, op: string, maxAbs: number | null, nonfinite: number) => ({
  phase: 'forward',
  kind: 'activation',
  layer,
  op,
  name: `${op}.out`,
  mean: 0,
  std: 1,
  max_abs: maxAbs,
  nonfinite,
});

describe('anomaly report', () => {
  it("reads the runtime's dump: per-op statistics with the named op highlighted, and the batch as text for byte-level data", () => {
    const dump = {
      format: 'fsdp-studio-nan-dump',
      version: 1,
      step: 57,
      tokens: [[72, 105, 10, 0]],
      stats: [stat('embedding', 'embed', 1, 0), stat(2, 'attn.scores', 9e9, 3), stat(2, 'attn.softmax', null, 12)],
    };
    const view = anomalyView(nan, dump, undefined, {
      model: { vocab_size: 256 },
      training: { learning_rate: 0.003, max_grad_norm: 1 },
    });
    assert.equal(view.summary, 'NaN in forward, layer 2 (attn.softmax); run stopped');
    const [stats, batch] = view.tables;
    assert.equal(stats.highlightRow, 2, 'the op the anomaly names, not the first with non-finite values');
    assert.equal(stats.chartColumn, 'max_abs');
    assert.deepEqual(stats.rows[1].slice(2, 4), [2, 'attn.scores']);
    assert.deepEqual(batch.rows[0], [0, 4, '72 105 10 0', 'Hi⏎·']);
    assert.match(view.policy, /stopped/);
  });

  it('shows a dump of unknown shape as tables of its records and fields', () => {
    const tables = dumpTables(
      {
        step: 3,
        layers: [
          { layer: 0, rms: 1 },
          { layer: 2, rms: Infinity },
        ],
        batch: { offset: 4096, ids: [1, 2, 3] },
      },
      2,
    );
    assert.deepEqual(
      tables.map((t) => t.title),
      ['dump', 'layers', 'batch'],
    );
    assert.equal(tables[1].highlightRow, 1);
    assert.equal(tables[1].chartColumn, 'rms');
    assert.deepEqual(tables[2].rows, [
      ['offset', 4096],
      ['ids', '[1, 2, 3]'],
    ]);
  });

  it('offers the fixes that apply to the config, each with its edit', () => {
    const config = {
      training: { learning_rate: 0.004, max_grad_norm: 0 },
      mixed_precision: { param_dtype: 'float16' },
      stability: { on_nan: 'stop' },
    };
    const fixes = fixesFor(nan, nativeAdvice(config));
    assert.deepEqual(
      fixes.map((f) => f.id),
      ['lower_lr', 'clip', 'bf16', 'rollback_policy', 'check_data'],
    );
    assert.deepEqual(fixEdit('lower_lr', nativeAdvice(config)), { path: ['training', 'learning_rate'], value: 0.002 });
    assert.deepEqual(fixEdit('bf16', nativeAdvice(config)), {
      path: ['mixed_precision', 'param_dtype'],
      value: 'bfloat16',
    });
    assert.equal(fixEdit('check_data', nativeAdvice(config)), undefined);
    assert.doesNotMatch(
      fixes.find((f) => f.id === 'check_data')!.detail,
      /prepare-data/,
      "a config's own data is not the sample's",
    );
    const tidy = fixesFor(
      nan,
      nativeAdvice({
        data: { train: 'data/fortunes-byte-train.tok' },
        training: { learning_rate: 0.001, max_grad_norm: 1 },
        mixed_precision: { param_dtype: 'bfloat16' },
        stability: { on_nan: 'rollback' },
      }),
    );
    assert.deepEqual(
      tidy.map((f) => f.id),
      ['lower_lr', 'check_data'],
    );
    assert.match(tidy[1].detail, /samples\/prepare-data\.ts/, "the sample's data names its maker");
  });

  it("speaks about a person's own script in its framework's words, with nothing that edits a file", () => {
    // What the manifest of a launch spec's run holds (runs/launch/command-launcher.ts).
    const spec = (command: string[], config?: string) => ({
      command,
      launcher: 'x',
      cwd: '/w',
      env: {},
      nproc_per_node: 1,
      target: 'local',
      ...(config ? { config } : {}),
    });
    const torch = adviceContext('command', spec(['torchrun', '--nproc_per_node', '2', 'train.py']));
    const fixes = fixesFor(nan, torch);
    assert.ok(
      fixes.every((f) => f.action === undefined),
      'no button: nothing to edit for the person',
    );
    assert.ok(fixes.every((f) => fixEdit(f.id, torch) === undefined));
    const text = fixes.map((f) => f.detail).join('\n');
    assert.match(text, /torch\.nn\.utils\.clip_grad_norm_\(model\.parameters\(\), 1\.0\)/);
    assert.match(text, /`train\.py`/);
    assert.doesNotMatch(text, /training\.|max_grad_norm|prepare-data|stability\./, 'no native config key');
    const clip = (ctx: ReturnType<typeof adviceContext>) => fixesFor(nan, ctx).find((f) => f.id === 'clip')!.detail;
    assert.match(
      clip(
        adviceContext(
          'command',
          spec(['python3', 'train.py']),
          'from transformers import Trainer, TrainingArguments\n',
        ),
      ),
      /`max_grad_norm=1\.0` to `TrainingArguments`/,
    );
    assert.match(
      clip(adviceContext('command', spec(['python3', 'train.py']), 'import lightning as L\n')),
      /gradient_clip_val=1\.0/,
    );
    assert.match(
      clip(
        adviceContext('command', spec(['deepspeed', '--num_gpus', '4', 'train.py', '--deepspeed', 'ds_config.json'])),
      ),
      /"gradient_clipping": 1\.0`? in `ds_config\.json`/,
    );
    assert.match(
      clip(adviceContext('command', spec(['accelerate', 'launch', '--config_file', 'acc.yaml', 'train.py']))),
      /accelerator\.clip_grad_norm_/,
    );
    // Lightning owns the loop even when accelerate launches it.
    assert.match(
      clip(
        adviceContext('command', spec(['accelerate', 'launch', 'train.py']), 'from lightning.pytorch import Trainer\n'),
      ),
      /gradient_clip_val/,
    );
  });
});
