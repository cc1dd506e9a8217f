// The companion's probe of torchtitan 0.3 configurations (python/fsdp_studio/torchtitan_configs.py),
// run as the editor runs it (runs/torchtitan/python-configs.ts) in the project's .venv with the
// real torchtitan 0.3.0: torchtitan_recipes' own configs, torchtitan's llama3 config_registry by
// --module name, a person's own module, a config that raises, and a Python without torchtitan.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { torchtitanPythonLens, type ProbeAnswer } from '../../core/memory/inputs/from-torchtitan-python';
import { probeScript, probeTorchtitanConfigs, pythonForConfig } from '../../runs/torchtitan/python-configs';
import { repoRoot } from '../../scripts/code-server';
import { pythonWithoutTorch, VENV_PYTHON } from '../harness/pytorch';

const SCRIPT = probeScript(repoRoot);
const SITE = path.join(repoRoot, '.venv', 'lib', 'python3.11', 'site-packages');
const MINE = path.join(repoRoot, 'test', 'fixtures', 'torchtitan', 'python', 'my_configs.py');

async function probe(target: string, python = VENV_PYTHON): Promise<ProbeAnswer> {
  const a = await probeTorchtitanConfigs(python, SCRIPT, target);
  if (!('python' in a)) assert.fail(`the probe did not run: ${a.error}`);
  return a;
}

const byName = (a: ProbeAnswer, name: string) => {
  const f = a.configs?.find((c) => c.function === name);
  assert.ok(f, `${name} in ${a.configs?.map((c) => c.function).join(', ')}`);
  return f;
};

describe('the torchtitan 0.3 configuration probe with the real torchtitan', function () {
  // Importing torchtitan and calling each config takes tens of seconds on a loaded machine.
  this.timeout(600_000);

  it("reads torchtitan_recipes' H100 suite: each config's degrees, and the one that needs torchao says so", async () => {
    const a = await probe(path.join(SITE, 'torchtitan_recipes', 'tests', 'h100.py'));
    assert.equal(a.torchtitan, '0.3.0');
    assert.equal(a.module, 'torchtitan_recipes.tests.h100');
    const tp2 = byName(a, 'llama3_debugmodel_tp2_asynctp_compile').config!;
    assert.equal(tp2.parallelism.tp, 2);
    assert.equal(tp2.compile.enable, true);
    assert.equal(tp2.model.shape?.dim, 256);
    const moe = byName(a, 'deepseek_v3_debugmodel_hybridep_fsdp4_ep2_compile');
    assert.deepEqual(
      [moe.config?.parallelism.dp_shard, moe.config?.parallelism.ep, moe.config?.model.shape?.moe],
      [4, 2, true],
    );
    // Its MoE widths are not read from the 0.3 config yet: the 0.2.2 flavour stands in, and the tooltip says so.
    const moeLens = torchtitanPythonLens(moe, { gpu: 'H100-80GB' });
    assert.match(
      moeLens.title,
      /^≤ [\d.]+ GiB \/ GPU \(unsure: torch\.compile not modelled\) — fits H100 80GB — DeepSeek-V3 debugmodel$/,
    );
    assert.match(moeLens.detail, /as torchtitan 0\.2\.2 defined it/);
    // The float8 converter imports torchao, which the .venv does not have: torchtitan's own error.
    const float8 = byName(a, 'llama3_debugmodel_float8_hsdp2x2_cp2_compile');
    assert.match(float8.error ?? '', /^ImportError: torchao is not installed.* \(at .*float8\.py:\d+\)$/);
    const lens = torchtitanPythonLens(byName(a, 'llama3_debugmodel_fsdp_symm_mem'), { gpu: 'H100-80GB' });
    assert.match(lens.title, /^≈ [\d.]+ GiB \/ GPU — fits H100 80GB — torchtitan llama3 debugmodel$/);
  });

  it('reads a module by its --module name: llama3 is torchtitan.models.llama3.config_registry', async () => {
    const a = await probe('llama3');
    assert.equal(a.module, 'torchtitan.models.llama3.config_registry');
    const c = byName(a, 'llama3_70b').config!;
    assert.deepEqual(
      [c.model.shape?.dim, c.model.shape?.n_layers, c.model.shape?.n_kv_heads, c.parallelism.tp],
      [8192, 80, 8, 8],
    );
    assert.equal(c.activation_checkpoint, 'full');
  });

  it("reads a config_registry.py by its path as its package's module: Qwen3's, with its tied embeddings", async () => {
    const a = await probe(path.join(SITE, 'torchtitan', 'models', 'qwen3', 'config_registry.py'));
    assert.equal(a.module, 'torchtitan.models.qwen3.config_registry');
    const small = byName(a, 'qwen3_0_6b').config!.model.shape!;
    assert.deepEqual(
      [small.dim, small.n_layers, small.n_kv_heads, small.head_dim, small.vocab_size, small.tied, small.qk_norm],
      [1024, 28, 8, 128, 151936, true, true],
    );
    assert.equal(byName(a, 'qwen3_32b').config!.model.shape!.tied, false);
  });

  it("reads a person's own module: the figure of its config, and where the other raised", async () => {
    const a = await probe(MINE);
    assert.deepEqual(
      a.configs?.map((c) => c.function),
      ['llama3_8b_fsdp8', 'llama3_8b_typo'],
      'describe() is not a configuration',
    );
    const mine = byName(a, 'llama3_8b_fsdp8');
    assert.deepEqual(
      [mine.config?.parallelism.dp_shard, mine.config?.training.local_batch_size, mine.config?.training.seq_len],
      [8, 2, 4096],
    );
    const lens = torchtitanPythonLens(mine, { gpu: 'H100-80GB' });
    assert.match(lens.title, /^≈ [\d.]+ GiB \/ GPU — fits H100 80GB — torchtitan llama3 8B$/);
    const typo = byName(a, 'llama3_8b_typo');
    assert.match(
      typo.error ?? '',
      /^AttributeError: 'ParallelismConfig' object has no attribute 'tensor_parallel_degre' \(at .*my_configs\.py:24\)$/,
    );
  });

  it('says so when the Python has no torchtitan', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-titan-bare-'));
    try {
      const bare = pythonWithoutTorch(path.join(dir, 'venv'));
      const a = await probe(MINE, bare);
      assert.match(a.error ?? '', /^torchtitan cannot be imported in .*: ModuleNotFoundError: No module named 'torch/);
      assert.equal(a.configs, undefined);
      assert.equal(a.notes, undefined, 'no note about triton when torchtitan itself is missing');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("chooses the Python as launch specs do: the Python extension's, else a launch spec's python:, else python3", () => {
    const ws = mkdtempSync(path.join(os.tmpdir(), 'fsdp-titan-ws-'));
    try {
      const sub = path.join(ws, 'configs');
      mkdirSync(sub);
      const file = path.join(sub, 'mine.py');
      writeFileSync(file, '');
      assert.equal(pythonForConfig(file, undefined, ws).python, 'python3');
      writeFileSync(path.join(ws, 'train.fsdp-launch.yaml'), 'command: python train.py\npython: ./env/bin/python\n');
      assert.deepEqual(pythonForConfig(file, undefined, ws), {
        python: path.join(ws, 'env', 'bin', 'python'),
        chosenBy: 'python: in train.fsdp-launch.yaml',
      });
      assert.equal(pythonForConfig(file, '/opt/selected/python', ws).python, '/opt/selected/python');
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  });
});
