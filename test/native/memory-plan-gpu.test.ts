// The plan for the CUDA backend against what the first GPU run measured (H100, 2026-11-23,
// ../shared/gpu-runs/2026-11-23-h100/README.md, "Memory plan vs measured at larger shapes": bf16,
// T 1024, micro-batch 8, NO_SHARD, one GPU). The plan then counted the CPU attention's B·H·T²
// probabilities and too little workspace (355M: activations 14.57 GB planned, 8.14 measured;
// workspace 0.44 planned, 0.99 measured); made for the backend, it meets every measured figure to
// the two decimals the run recorded. The byte-for-byte check is the GPU's (scripts/gpu/check_runs.py).
import assert from 'node:assert/strict';
import { resolveRunConfig, type RunConfig } from '../../core/config/run-config';
import { loadAddon } from './native-build';

const MEASURED = [
  { name: 'GPT-2 355M', model: { d_model: 1024, n_layers: 24, n_heads: 16 }, activations: 8.14, workspace: 0.99, total: 15.52 },
  { name: 'GPT-2 774M shape', model: { d_model: 1280, n_layers: 36, n_heads: 20 }, activations: 13.8, workspace: 1.03, total: 28.76 },
];

describe('native runtime: the CUDA plan meets the H100\'s measured peaks', () => {
  for (const m of MEASURED) {
    it(`${m.name}: activations, workspace and total as measured (GB, two decimals)`, () => {
      const config = {
        model: { ...m.model, vocab_size: 50257, max_seq_len: 1024 },
        data: { train: 'data/train.tok', seq_len: 1024 },
        training: { batch_size_per_gpu: 8, max_steps: 10, learning_rate: 0.001 },
        fsdp: { sharding_strategy: 'NO_SHARD' },
        mixed_precision: { param_dtype: 'bfloat16', reduce_dtype: 'bfloat16', buffer_dtype: 'bfloat16' },
        launch: { device: 'cuda' },
      } as RunConfig;
      const plan = loadAddon().memoryPlan(resolveRunConfig(config, '/')) as unknown as Record<string, number> & { outside_allocator?: { library_workspace: number } };
      const gb = (bytes: number) => Math.round(bytes / 1e7) / 100;
      assert.deepEqual({ activations: gb(plan.activations), workspace: gb(plan.workspace), total: gb(plan.total) }, { activations: m.activations, workspace: m.workspace, total: m.total });
      assert.equal(plan.outside_allocator?.library_workspace, 32 * 2 ** 20, 'cuBLASLt\'s workspace, outside the allocator');
      // The same config on the CPU backend plans the T×T probabilities: far more.
      const cpu = loadAddon().memoryPlan(resolveRunConfig({ ...config, launch: { device: 'cpu' } }, '/')) as unknown as Record<string, number>;
      assert.ok(cpu.activations > 1.5 * plan.activations, `cpu ${cpu.activations} vs cuda ${plan.activations}`);
    });
  }
});
