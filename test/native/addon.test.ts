import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadRunConfig } from '../../core/config/run-config';
import { loadAddon, nativeCli, repoRoot } from './native-build';

const addon = loadAddon();

function tinyCpu(overrides: string[] = []) {
  const file = path.join(repoRoot, 'samples', 'tiny-cpu.yaml');
  const loaded = loadRunConfig(readFileSync(file, 'utf8'), file, overrides);
  assert.ok(loaded.config, JSON.stringify(loaded.problems));
  return loaded.config;
}

describe('native addon: validateConfig and memoryPlan', () => {
  it('accepts samples/tiny-cpu.yaml', () => {
    const result = addon.validateConfig(tinyCpu());
    assert.deepEqual(result.errors, []);
    assert.equal(result.ok, true);
  });

  it('names the key of a relation the schema cannot check', () => {
    const result = addon.validateConfig(tinyCpu(['data.seq_len=256']));
    assert.equal(result.ok, false);
    assert.deepEqual(
      result.errors.map((e) => e.path),
      ['data.seq_len'],
    );
  });

  it("holds a config no front end checked to the schema's rules between keys (x-checks), at the key", () => {
    // fsdp-train refuses n_heads 3 itself now (the same schema rule): hand the runtime the resolved
    // config as a remote host's fsdp-train-native would get it, edited after the check.
    const config = tinyCpu();
    config.model.n_heads = 3;
    const result = addon.validateConfig(config);
    assert.deepEqual(
      result.errors.map((e) => e.path),
      ['model.n_heads'],
    );
    assert.match(result.errors[0].message, /^3 does not divide model.d_model \(128\): attention splits d_model/);
  });

  it('takes bfloat16 on the CPU only for the matrix products, where oneDNN runs it faster than float32 (AMX-BF16, or Zen 4 AVX512-BF16), and still plans it for cuda', () => {
    // The CLI's probe says whether this build and CPU run bf16 products (backend/cpu/bf16_gemm.h).
    const probe = JSON.parse(execFileSync(nativeCli, ['--probe'], { encoding: 'utf8' })) as {
      cpu_gemm: { bfloat16: { bf16_available: boolean; bf16_refusal?: string } };
    };
    const bf16 = probe.cpu_gemm.bfloat16;
    const errors = addon.validateConfig(tinyCpu(['mixed_precision.param_dtype=bfloat16'])).errors;
    if (bf16.bf16_available) assert.deepEqual(errors, []);
    else
      assert.deepEqual(errors, [
        { path: 'mixed_precision.param_dtype', message: `bfloat16 on launch.device: cpu: ${bf16.bf16_refusal}` },
      ]);
    // Gradients reduced and activations kept in bf16 stay refused on the CPU, with the reason.
    for (const key of ['reduce_dtype', 'buffer_dtype']) {
      const refused = addon.validateConfig(tinyCpu([`mixed_precision.${key}=bfloat16`])).errors;
      assert.deepEqual(
        refused.map((e) => e.path),
        [`mixed_precision.${key}`],
      );
      assert.match(refused[0].message, /only param_dtype may be bfloat16/);
    }
    const fp32 = addon.memoryPlan(tinyCpu());
    const cuda = addon.memoryPlan(tinyCpu(['mixed_precision.param_dtype=bfloat16', 'launch.device=cuda']));
    // A bfloat16 compute copy of every parameter joins the float32 masters: 4P + 2P.
    assert.equal(cuda.params, fp32.params * 1.5);
  });

  it('plans the categories of native/MEMORY.md for tiny-cpu', () => {
    const plan = addon.memoryPlan(tinyCpu());
    const P = plan.n_params;
    assert.equal(plan.params, 4 * P);
    assert.equal(plan.grads, 4 * P);
    assert.equal(plan.optimizer, 8 * P);
    assert.equal(plan.comm, 0);
    assert.equal(plan.total, Math.max(plan.phases.forward, plan.phases.backward, plan.phases.optimizer));
    assert.ok(
      plan.total < plan.params + plan.grads + plan.optimizer + plan.activations + plan.workspace + plan.other + 1,
    );
    assert.deepEqual(plan.world, { size: 1, shard_degree: 1, strategy: 'NO_SHARD' });
  });

  it('shards optimizer state across ranks with FULL_SHARD', () => {
    const one = addon.memoryPlan(tinyCpu());
    const four = addon.memoryPlan(tinyCpu(['launch.nproc_per_node=4', 'fsdp.sharding_strategy=FULL_SHARD']));
    assert.equal(four.world.strategy, 'FULL_SHARD');
    assert.ok(four.optimizer <= one.optimizer / 4 + 8 * 8, `${four.optimizer} vs ${one.optimizer}`);
    assert.ok(four.optimizer >= one.optimizer / 4);
  });

  it('checkpointing every block keeps less activation memory than none, selective in between', () => {
    const none = addon.memoryPlan(tinyCpu()).activations;
    const every1 = addon.memoryPlan(
      tinyCpu(['activation_checkpointing.enabled=true', 'activation_checkpointing.every_n_layers=1']),
    ).activations;
    const selective = addon.memoryPlan(
      tinyCpu(['activation_checkpointing.enabled=true', 'activation_checkpointing.policy=selective']),
    ).activations;
    assert.ok(every1 < selective && selective < none, `every-1 ${every1}, selective ${selective}, none ${none}`);
  });

  it('auto picks the least recomputation that fits the budget', () => {
    const none = addon.memoryPlan(tinyCpu());
    const roomy = addon.memoryPlan(
      tinyCpu([
        'activation_checkpointing.enabled=true',
        'activation_checkpointing.policy=auto',
        `activation_checkpointing.memory_budget_gb=${(none.total + 1) / 2 ** 30}`,
      ]),
    );
    assert.equal(roomy.activation_checkpointing.policy, 'none');
    const tight = addon.memoryPlan(
      tinyCpu([
        'activation_checkpointing.enabled=true',
        'activation_checkpointing.policy=auto',
        `activation_checkpointing.memory_budget_gb=${(none.total - 1) / 2 ** 30}`,
      ]),
    );
    assert.notEqual(tight.activation_checkpointing.policy, 'none');
    assert.ok(tight.total <= none.total - 1);
    const impossible = tinyCpu([
      'activation_checkpointing.enabled=true',
      'activation_checkpointing.policy=auto',
      'activation_checkpointing.memory_budget_gb=0.001',
    ]);
    assert.equal(addon.validateConfig(impossible).errors[0].path, 'activation_checkpointing.memory_budget_gb');
  });
});

describe('native addon: smokeStep', function () {
  this.timeout(60_000);

  it('runs one forward/backward of tiny-cpu off the main thread: an untrained loss near ln V', async () => {
    const result = await addon.smokeStep(tinyCpu());
    assert.equal(result.backend, 'cpu');
    assert.ok(
      result.loss !== null && Math.abs(result.loss - result.expected_loss) < 0.5,
      `loss ${result.loss}, ln V ${result.expected_loss}`,
    );
    assert.ok(result.grad_norm > 0);
    assert.equal(result.tokens, 16);
    assert.equal(result.n_params, addon.memoryPlan(tinyCpu()).n_params);
  });

  it('rejects a config the runtime cannot run, naming the key', async () => {
    const config = tinyCpu();
    config.model.n_heads = 3;
    await assert.rejects(addon.smokeStep(config), /model\.n_heads: 3 does not divide/);
  });
});
