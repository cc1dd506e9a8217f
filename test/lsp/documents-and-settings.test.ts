import assert from 'node:assert/strict';
import path from 'node:path';
import { LanguageServerClient, repoRoot } from './harness/language-server-client';

const DS = '{"train_batch_size": 30, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2}';

describe('language server over stdio: which files are configs, and the fsdp.* settings', function () {
  this.timeout(60_000);

  it('recognises DeepSpeed and accelerate configs by content whatever their name, and leaves other files alone', async () => {
    const server = await LanguageServerClient.start();
    try {
      const ds = await server.open('file:///w/train/settings.json', DS);
      assert.deepEqual(
        ds.map((d) => d.code),
        ['deepspeed.batch-size'],
      );
      const acc = await server.open(
        'file:///w/cluster.yaml',
        'compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nnum_processes: 3\nnum_machines: 2\nmain_process_ip: 10.0.0.1\nmain_process_port: 29500\n',
      );
      assert.deepEqual(
        acc.map((d) => d.code),
        ['accelerate.processes-per-machine'],
      );
      const run = await server.open(
        'file:///w/any-name.yaml',
        'model: {d_model: 64, n_layers: 2, n_heads: 5, vocab_size: 256, max_seq_len: 32}\ndata: {train: t.tok}\ntraining: {batch_size_per_gpu: 2, max_steps: 10, learning_rate: 0.001}\n',
      );
      assert.deepEqual(
        run.map((d) => d.code),
        ['run.heads-divide-width'],
      );
      assert.deepEqual(
        await server.open('file:///w/tsconfig.json', '{"compilerOptions": {"strict": true}, "zero": 1}'),
        [],
      );
      assert.deepEqual(await server.open('file:///w/docker-compose.yaml', 'services:\n  web: {image: nginx}\n'), []);
      assert.deepEqual(
        await server.open('file:///w/empty.fsdp.yaml', 'model: {}\n').then((d) => d.map((x) => x.code).sort()),
        [
          'schema.required',
          'schema.required',
          'schema.required',
          'schema.required',
          'schema.required',
          'schema.required',
          'schema.required',
        ],
        'named *.fsdp.yaml: a run config whatever it holds',
      );
    } finally {
      await server.stop();
    }
  });

  it('follows fsdp.files.associations, including "none" to leave a file alone', async () => {
    const server = await LanguageServerClient.start({
      settings: { files: { associations: { '*.train.json': 'deepspeed', 'ds_config_ignored.json': 'none' } } },
    });
    try {
      const associated = await server.open(
        'file:///w/model.train.json',
        '{"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": true}, "bf16": {"enabled": true}}',
      );
      assert.deepEqual(
        associated.map((d) => d.code),
        ['deepspeed.fp16-and-bf16'],
      );
      assert.deepEqual(await server.open('file:///w/ds_config_ignored.json', DS), []);
    } finally {
      await server.stop();
    }
  });

  it('takes the DeepSpeed world size from fsdp.deepspeed.worldSize, re-checking open files when it changes', async () => {
    const server = await LanguageServerClient.start({ settings: {} });
    try {
      const uri = 'file:///w/ds_config.json';
      const text = '{"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2}';
      assert.deepEqual(await server.open(uri, text), [], '32 is a multiple of 4 x 2: fine for some world size');
      const [withFive] = await server.setSettings({ deepspeed: { worldSize: 5 } }, [{ uri, text }]);
      assert.equal(withFive.length, 1);
      assert.match(
        String(withFive[0].message),
        /train_batch_size 32 ≠ train_micro_batch_size_per_gpu × gradient_accumulation_steps × world size = 4 × 2 × 5 = 40/,
      );
      const [withFour] = await server.setSettings({ deepspeed: { worldSize: 4 } }, [{ uri, text }]);
      assert.deepEqual(withFour, []);
    } finally {
      await server.stop();
    }
  });

  it("says in its log whether the runtime's own validation is on, and checks without it when the addon is missing", async () => {
    const missing = path.join(repoRoot, 'native', 'build', 'Release', 'no-such-addon.node');
    const server = await LanguageServerClient.start({ nativeAddonPath: missing });
    try {
      const d = await server.open(
        'file:///w/x.fsdp.yaml',
        'model: {d_model: 64, n_layers: 2, n_heads: 5, vocab_size: 256, max_seq_len: 32}\ndata: {train: t.tok}\ntraining: {batch_size_per_gpu: 2, max_steps: 10, learning_rate: 0.001}\n',
      );
      assert.deepEqual(
        d.map((x) => x.code),
        ['run.heads-divide-width'],
      );
      assert.ok(
        server.logs.some(
          (l) => l.message === `runtime validation off: the native runtime is not built (${missing} is missing)`,
        ),
        JSON.stringify(server.logs),
      );
    } finally {
      await server.stop();
    }
  });
});
