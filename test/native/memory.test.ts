// The memory plan reported at run_start is what the runtime's allocator measures: every step's
// peak, category by category, equals the plan (native/MEMORY.md), with and without activation
// checkpointing and gradient accumulation.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import path from 'node:path';
import type { NativeMemoryPlan } from '../../extension/native-runtime';
import { eventsOf, readRun, smallConfig, tempDir, train, writeConfig } from './train-runs';

const CATEGORIES = ['params', 'grads', 'optimizer', 'activations', 'workspace', 'comm', 'other', 'total'] as const;

describe('native runtime: measured memory peaks equal the plan', function () {
  this.timeout(120_000);
  let dir: string;
  before(() => (dir = tempDir('memory')));
  after(() => rmSync(dir, { recursive: true, force: true }));

  const cases: Array<[string, Record<string, Record<string, unknown>>]> = [
    ['no checkpointing', {}],
    [
      'every block checkpointed, 2 micro-batches',
      { activation_checkpointing: { enabled: true, every_n_layers: 1 }, training: { gradient_accumulation_steps: 2 } },
    ],
    [
      'every 2nd of 3 blocks',
      { model: { n_layers: 3 }, activation_checkpointing: { enabled: true, every_n_layers: 2 } },
    ],
    ['selective', { activation_checkpointing: { enabled: true, policy: 'selective' } }],
  ];
  for (const [name, extra] of cases) {
    it(name, async () => {
      const runDir = path.join(dir, name.replace(/\W+/g, '-'));
      const config = smallConfig({ ...extra, training: { max_steps: 3, ...extra.training } });
      const r = await train([writeConfig(dir, config, 'config.json'), '--run-dir', runDir]);
      assert.equal(r.code, 0, r.stderr);
      const { events } = await readRun(runDir);
      const plan = eventsOf(events, 'run_start')[0].memory_plan!; // the native runtime always plans
      const steps = eventsOf(events, 'step');
      assert.equal(steps.length, 3);
      for (const s of steps) {
        assert.ok(s.mem_peak_by_category, 'step without mem_peak_by_category');
        for (const c of CATEGORIES) assert.equal(s.mem_peak_by_category[c], plan[c], `step ${s.step} ${c}`);
        assert.equal(s.mem_peak, plan.total);
      }
    });
  }

  it('auto under a budget between the plans of none and every block', async () => {
    const planOf = async (extra: Record<string, Record<string, unknown>>) => {
      const r = await train([writeConfig(dir, smallConfig(extra), 'plan.json'), '--plan']);
      assert.equal(r.code, 0, r.stderr);
      return JSON.parse(r.stdout) as { total: number };
    };
    const none = await planOf({});
    const every = await planOf({ activation_checkpointing: { enabled: true, every_n_layers: 1 } });
    const budget = (none.total + every.total) / 2 / 2 ** 30;
    const runDir = path.join(dir, 'auto');
    const config = smallConfig({
      training: { max_steps: 2 },
      activation_checkpointing: { enabled: true, policy: 'auto', memory_budget_gb: budget },
    });
    const r = await train([writeConfig(dir, config, 'auto.json'), '--run-dir', runDir]);
    assert.equal(r.code, 0, r.stderr);
    const { events } = await readRun(runDir);
    const plan = eventsOf(events, 'run_start')[0].memory_plan as unknown as NativeMemoryPlan;
    assert.notEqual(plan.activation_checkpointing.policy, 'none');
    assert.ok(plan.total <= budget * 2 ** 30);
    for (const s of eventsOf(events, 'step')) assert.equal(s.mem_peak, plan.total);
  });
});
