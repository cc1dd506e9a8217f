// Checkpoints people can take elsewhere (issue 23): `fsdp-train export RUN --hf DIR` writes a native
// checkpoint — here one saved by 2 ranks under FULL_SHARD — as a Hugging Face GPT-2 folder that
// transformers (the project's .venv) loads with from_pretrained, its logits equal to the native
// model's within 1e-5 (float32); a config whose model is `from_hf: DIR` starts a native run on 2
// ranks from a folder transformers itself saved (its config.json giving every model key), the run's
// step-0 weights giving transformers' logits; `--from-hf DIR` with a model of another shape, or a
// damaged model.safetensors, is refused naming what is wrong. (The formats' own cases, hostile
// files among them: native/test/hf_gpt2_test.cc.)
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, truncateSync } from 'node:fs';
import path from 'node:path';
import { VENV_PYTHON } from '../harness/pytorch';
import { nativeCli, repoRoot } from './native-build';
import { eventsOf, readRun, smallConfig, tempDir, train, writeConfig } from './train-runs';

const HF_SCRIPT = path.join(repoRoot, 'test', 'pytorch', 'hf_gpt2.py');
const TOLERANCE = 1e-5;

interface Logits {
  shape: number[];
  logits: number[];
}

/** Sequences of token ids below 256 (the byte vocabulary), the same every run. */
function tokenRows(rows: number, length: number): number[][] {
  return Array.from({ length: rows }, (_, r) =>
    Array.from({ length }, (_, t) => (r * 131 + t * 29 + ((r * t) % 7)) % 256),
  );
}

function nativeLogits(configFile: string, checkpoint: string, rows: number[][]): Logits {
  const r = spawnSync(nativeCli, ['--logits', configFile, checkpoint], {
    input: JSON.stringify(rows),
    encoding: 'utf8',
    maxBuffer: 1 << 28,
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as Logits;
}

type Job = { make: string; model: unknown; seed: number } | { logits: string; tokens: number[][] };

/** Runs jobs in one start of transformers (test/pytorch/hf_gpt2.py): folders made, or logits of a folder. */
function transformers(jobs: Job[]): Array<Logits & { tied: boolean }> {
  const r = spawnSync(VENV_PYTHON, [HF_SCRIPT], {
    input: JSON.stringify(jobs),
    encoding: 'utf8',
    maxBuffer: 1 << 28,
    env: { ...process.env, HF_HUB_OFFLINE: '1' },
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as Array<Logits & { tied: boolean }>;
}

/** The largest |a - b| over the logits, relative to the largest |b|. */
function worstDifference(a: Logits, b: Logits): number {
  assert.deepEqual(a.shape, b.shape);
  let diff = 0;
  let scale = 0;
  for (let i = 0; i < b.logits.length; i++) {
    diff = Math.max(diff, Math.abs(a.logits[i] - b.logits[i]));
    scale = Math.max(scale, Math.abs(b.logits[i]));
  }
  return diff / scale;
}

describe('checkpoints as Hugging Face GPT-2 folders, against transformers', function () {
  this.timeout(600_000);
  let dir: string;
  // Untied head and mlp_ratio 3: every tensor of GPT-2 and its n_inner, sharded over 2 ranks.
  const config = smallConfig({
    model: {
      d_model: 32,
      n_layers: 2,
      n_heads: 4,
      vocab_size: 256,
      max_seq_len: 32,
      mlp_ratio: 3,
      tie_embeddings: false,
      init_std: 0.1,
    },
    training: { max_steps: 6, batch_size_per_gpu: 2 },
    fsdp: { sharding_strategy: 'FULL_SHARD' },
    launch: { nproc_per_node: 2, threads_per_rank: 1 },
    logging: { tensorboard: false, eval_batches: 1 },
  });
  // Folders transformers saved itself: one of the config's model, one of another.
  const fromTransformers = () => path.join(dir, 'from-transformers');
  const ofAnotherModel = () => path.join(dir, 'other');
  before(() => {
    dir = tempDir('hf-export');
    transformers([
      { make: fromTransformers(), model: config.model, seed: 5 },
      {
        make: ofAnotherModel(),
        model: { ...(config.model as Record<string, unknown>), d_model: 16, n_layers: 3 },
        seed: 6,
      },
    ]);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("a checkpoint saved by 2 ranks (FULL_SHARD) exports; transformers loads it with logits equal to the native model's within 1e-5", async () => {
    const runDir = path.join(dir, 'sharded');
    const r = await train([writeConfig(dir, config, 'sharded.json'), '--run-dir', runDir]);
    assert.equal(r.code, 0, r.stderr);
    const hf = path.join(dir, 'exported');
    const exported = await train(['export', runDir, '--hf', hf]);
    assert.equal(exported.code, 0, exported.stderr);
    assert.match(exported.stdout, /step-00000006 written as a Hugging Face GPT-2 model/);
    const hfConfig = JSON.parse(readFileSync(path.join(hf, 'config.json'), 'utf8')) as Record<string, unknown>;
    assert.equal(hfConfig.model_type, 'gpt2');
    assert.equal(hfConfig.n_inner, 96);
    assert.equal(hfConfig.tie_word_embeddings, false);

    const rows = tokenRows(3, 32);
    const ours = nativeLogits(
      path.join(runDir, 'config.json'),
      path.join(runDir, 'checkpoints', 'step-00000006'),
      rows,
    );
    const [theirs] = transformers([{ logits: hf, tokens: rows }]);
    assert.equal(theirs.tied, false);
    const worst = worstDifference(ours, theirs);
    console.log(`      worst logit difference (relative to the largest logit): ${worst.toExponential(2)}`);
    assert.ok(worst <= TOLERANCE, `logits differ by ${worst}`);
  });

  it("a folder transformers saved starts a native run on 2 ranks (model.from_hf alone): its step-0 weights give transformers' logits", async () => {
    const hf = fromTransformers();
    const runDir = path.join(dir, 'imported');
    // The model section is the folder, relative to the config's own folder: its config.json gives every key.
    const fromFolder = { ...config, model: { from_hf: path.basename(hf) } };
    const r = await train([writeConfig(dir, fromFolder, 'imported.json'), '--run-dir', runDir]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /starting from the Hugging Face model in/);
    const resolved = JSON.parse(readFileSync(path.join(runDir, 'config.json'), 'utf8')) as {
      model: Record<string, unknown>;
    };
    const { init_std: _initStd, ...written } = config.model as Record<string, unknown>;
    assert.deepEqual(Object.fromEntries(Object.keys(written).map((k) => [k, resolved.model[k]])), written);
    assert.equal(resolved.model.from_hf, hf);
    const { events, manifest } = await readRun(runDir);
    assert.equal(manifest.status, 'completed');
    // The run's own step events (those with a rank are each rank's memory).
    const steps = eventsOf(events, 'step').filter((s) => s.rank === undefined);
    assert.deepEqual(
      steps.map((s) => s.step),
      [1, 2, 3, 4, 5, 6],
    );
    assert.ok(steps.every((s) => Number.isFinite(s.loss)));

    const rows = tokenRows(2, 32);
    const worst = worstDifference(
      nativeLogits(path.join(runDir, 'config.json'), path.join(runDir, 'checkpoints', 'step-00000000'), rows),
      transformers([{ logits: hf, tokens: rows }])[0],
    );
    console.log(`      worst logit difference at step 0 (relative to the largest logit): ${worst.toExponential(2)}`);
    assert.ok(worst <= TOLERANCE, `logits differ by ${worst}`);
  });

  it('a folder of another model is refused with every difference named, and a damaged model.safetensors naming the file', async () => {
    const hf = ofAnotherModel();
    const single = { ...config, launch: { ...(config.launch as Record<string, unknown>), nproc_per_node: 1 } };
    const refused = await train([
      writeConfig(dir, single, 'other.json'),
      '--run-dir',
      path.join(dir, 'refused'),
      '--from-hf',
      hf,
    ]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /config\.json is not the run config's model/);
    assert.match(refused.stderr, /n_embd is 16, the run config's model\.d_model 32/);
    assert.match(refused.stderr, /n_layer is 3, the run config's model\.n_layers 2/);
    assert.equal((await readRun(path.join(dir, 'refused'))).manifest.status, 'failed');
    assert.ok(!existsSync(path.join(dir, 'refused', 'checkpoints', 'step-00000000')));

    const damaged = path.join(dir, 'exported');
    truncateSync(path.join(damaged, 'model.safetensors'), 1000);
    const r = await train([
      writeConfig(dir, single, 'damaged.json'),
      '--run-dir',
      path.join(dir, 'damaged'),
      '--from-hf',
      damaged,
    ]);
    assert.notEqual(r.code, 0);
    assert.ok(r.stderr.includes(path.join(damaged, 'model.safetensors')), r.stderr);
  });
});
