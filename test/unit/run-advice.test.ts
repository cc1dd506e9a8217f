import assert from 'node:assert/strict';
import { fixEdit } from '../../core/runs/anomaly-report';
import { adviceContext, earlyInRun, frameworkOf, nativeAdvice, suggestedWarmup } from '../../core/runs/run-advice';
import { spikeFixes } from '../../core/runs/spike-report';
import type { Spike } from '../../core/runs/spikes';

const spikeAt = (step: number): Spike => ({
  step,
  metric: 'loss',
  value: 9,
  baseline: 3,
  ratio: 3,
  source: 'watch',
  action: 'report',
  alert: 'warning',
});

describe('advice that fits the run', () => {
  it('scales the warmup it suggests to the run: no 100-step warmup for a 150-step run', () => {
    assert.equal(suggestedWarmup(10, 150), 20, 'twice the current one');
    assert.equal(suggestedWarmup(0, 150), 8, '5% of the run when there is none');
    assert.equal(suggestedWarmup(20, 150), 30, 'never above a fifth of the run');
    assert.equal(suggestedWarmup(30, 150), undefined, 'already as long as that allows');
    assert.equal(suggestedWarmup(0, undefined), 100, 'an unknown length keeps the common default');
    assert.ok(earlyInRun(15, 10, 150));
    assert.ok(!earlyInRun(120, 10, 150));
  });

  it("offers a 150-step run's early spike a warmup that fits its length, as a fix that edits the run config", () => {
    const tiny = nativeAdvice({
      training: { learning_rate: 0.003, max_steps: 150, warmup_steps: 10, max_grad_norm: 1 },
    });
    const fixes = spikeFixes(spikeAt(15), tiny);
    const warm = fixes.find((f) => f.id === 'longer_warmup')!;
    assert.equal(warm.action, 'Set warmup_steps: 20');
    assert.match(warm.detail, /10 of 150 steps; 20/);
    assert.deepEqual(fixEdit('longer_warmup', tiny), { path: ['training', 'warmup_steps'], value: 20 });
    assert.ok(!fixes.some((f) => f.id === 'clip'), 'clipping at 1.0 is on already');
  });

  it("gives a script's spike advice in its framework's words, without buttons", () => {
    const ctx = adviceContext('command', { command: ['python3', 'train.py'] }, 'from transformers import Trainer\n');
    const fixes = spikeFixes(spikeAt(15), ctx);
    assert.deepEqual(
      fixes.map((f) => f.id),
      ['lower_lr', 'longer_warmup', 'clip', 'check_data'],
    );
    assert.ok(fixes.every((f) => f.action === undefined));
    assert.match(fixes[0].detail, /`learning_rate` in `TrainingArguments`/);
    assert.match(fixes[1].detail, /warmup_ratio=0\.05/);
    assert.doesNotMatch(fixes.map((f) => f.detail).join(' '), /warmup_steps: 100|training\./);
  });

  it('tells the framework from the script before the launcher', () => {
    assert.equal(frameworkOf('torchrun'), 'pytorch');
    assert.equal(frameworkOf('deepspeed'), 'deepspeed');
    assert.equal(frameworkOf('accelerate'), 'accelerate');
    assert.equal(frameworkOf('python', 'import pytorch_lightning as pl\n'), 'lightning');
    assert.equal(
      frameworkOf('torchrun', 'from transformers import (AutoModel,\n  Trainer)\n'),
      'hf-trainer',
      'a parenthesised import across lines is read (run_clm.py imports the Trainer so)',
    );
    assert.equal(frameworkOf('torchrun', 'from trl import SFTTrainer\n'), 'hf-trainer');
    assert.equal(frameworkOf('python', 'from accelerate import Accelerator\n'), 'accelerate');
    assert.equal(
      frameworkOf('python', '# from transformers import Trainer (not used)\nimport torch\n'),
      'pytorch',
      'a comment is not an import',
    );
  });
});
