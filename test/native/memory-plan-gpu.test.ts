// The plan for the CUDA backend against what the first GPU run measured (H100, 2026-11-23,
// ../shared/gpu-runs/2026-11-23-h100/README.md, "Memory plan vs measured at larger shapes": bf16,
// T 1024, micro-batch 8, NO_SHARD, one GPU). The plan then counted the CPU attention's B·H·T²
// probabilities and too little workspace (355M: activations 14.57 GB planned, 8.14 measured;
// workspace 0.44 planned, 0.99 measured). The classifier has changed since (issue 14: logits in the
// compute dtype, padded to 128, no float32 cast of their gradient), so the measurement checks what
// did not change: the blocks' activations (measured activations less that code's head, a N C + 12N
// + 4 N V) and the blocks' workspace (measured workspace less that code's cast gradient, p N V),
// within the two decimals (GB) the run recorded. Byte for byte is the GPU's check (check_runs.py).
import assert from 'node:assert/strict';
import { resolveRunConfig, type RunConfig } from '../../core/config/run-config';
import { loadAddon } from './native-build';

const GB = 1e9;
const MEASURED = [
  { name: 'GPT-2 355M', model: { d_model: 1024, n_layers: 24, n_heads: 16 }, activations: 8.14, workspace: 0.99 },
  { name: 'GPT-2 774M shape', model: { d_model: 1280, n_layers: 36, n_heads: 20 }, activations: 13.8, workspace: 1.03 },
];

describe("native runtime: the CUDA plan's block terms meet the H100's measured peaks", () => {
  for (const m of MEASURED) {
    it(`${m.name}: activations and workspace of the blocks as measured (two decimals of GB)`, () => {
      const config = {
        model: { ...m.model, vocab_size: 50257, max_seq_len: 1024 },
        data: { train: 'data/train.tok', seq_len: 1024 },
        training: { batch_size_per_gpu: 8, max_steps: 10, learning_rate: 0.001 },
        fsdp: { sharding_strategy: 'NO_SHARD' },
        mixed_precision: { param_dtype: 'bfloat16', reduce_dtype: 'bfloat16', buffer_dtype: 'bfloat16' },
        launch: { device: 'cuda' },
      } as RunConfig;
      const plan = loadAddon().memoryPlan(resolveRunConfig(config, '/')) as unknown as Record<string, number> & {
        outside_allocator?: { library_workspace: number };
      };
      const N = 8 * 1024,
        C = m.model.d_model,
        V = 50257,
        Vp = Math.ceil(V / 128) * 128,
        a = 2,
        p = 2;
      // Today's head and the classifier's largest scratch (MEMORY.md), taken off the plan.
      const headNow = a * N * C + 12 * N + p * N * Vp;
      const scratchNow = Math.max(
        (p + 4) * (Vp - Math.floor(V / 128) * 128) * C,
        4 * Math.ceil(N / 256) * Math.max(3 * C, 4 * C),
        4 * Math.ceil(N / 128) * 2 * C,
        4 * (3 * N + 1),
      );
      // What the measured code's head held, and its largest scratch (the logits' gradient cast), taken off the measurement.
      const headThen = a * N * C + 12 * N + 4 * N * V;
      const scratchThen = p * N * V;
      const close = (mine: number, measured: number) => Math.abs(mine - measured) <= 0.0051 * GB;
      assert.ok(
        close(plan.activations - headNow, m.activations * GB - headThen),
        `blocks' activations: plan ${(plan.activations - headNow) / GB} GB, measured ${(m.activations * GB - headThen) / GB} GB`,
      );
      assert.ok(
        close(plan.workspace - scratchNow, m.workspace * GB - scratchThen),
        `blocks' workspace: plan ${(plan.workspace - scratchNow) / GB} GB, measured ${(m.workspace * GB - scratchThen) / GB} GB`,
      );
      assert.equal(
        plan.outside_allocator?.library_workspace,
        32 * 2 ** 20,
        "cuBLASLt's workspace, outside the allocator",
      );
      // The same config on the CPU backend plans the T×T probabilities: far more.
      const cpu = loadAddon().memoryPlan(
        resolveRunConfig({ ...config, launch: { device: 'cpu' } }, '/'),
      ) as unknown as Record<string, number>;
      assert.ok(cpu.activations > 1.5 * plan.activations, `cpu ${cpu.activations} vs cuda ${plan.activations}`);
    });
  }
});
