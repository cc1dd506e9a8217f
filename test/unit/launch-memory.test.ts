// The memory estimate shown before a person's own command is launched: the estimator's, for the
// DeepSpeed config the launch spec or the command names (a public config from transformers' tests).
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadLaunchSpec } from '../../core/config/launch-spec';
import { launchMemoryNote } from '../../runs/launch/launch-memory';

const ZERO3 = path.join(
  __dirname,
  '..',
  'fixtures',
  'public-configs',
  'huggingface-transformers',
  'tests',
  'deepspeed',
  'ds_config_zero3.json',
);
const read = (p: string) => {
  try {
    return readFileSync(p, 'utf8');
  } catch {
    return undefined;
  }
};

describe('memory estimate before launching a command', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-launch-mem-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const specIn = (body: string) => {
    const file = path.join(dir, 's.fsdp-launch.yaml');
    writeFileSync(file, body);
    return loadLaunchSpec(body, file, read).spec!;
  };

  it('the config a spec names: its estimate against the GPU, and whether it fits', () => {
    copyFileSync(ZERO3, path.join(dir, 'ds_config.json'));
    // Nothing names the model: no estimate for a stand-in; the note asks which.
    const unnamed = launchMemoryNote(
      specIn('command: deepspeed --num_gpus 1 train.py --deepspeed ds_config.json\nconfig: ds_config.json\n'),
      read,
      { gpu: 'A100-80GB' },
    );
    assert.match(unnamed!.text, /^ds_config\.json: no memory estimate: which model\? nothing names the model/);
    // The command names it (a preset's Hugging Face id, found offline).
    const fits = launchMemoryNote(
      specIn(
        'command: deepspeed --num_gpus 1 train.py --deepspeed ds_config.json --model_name_or_path openai-community/gpt2-medium\nconfig: ds_config.json\n',
      ),
      read,
      { gpu: 'A100-80GB' },
    );
    assert.match(
      fits!.text,
      // The sample sets stage3_max_reuse_distance, which ZeRO 3's estimate does not model: a range.
      /^ds_config\.json: ≈ [\d.]+ GiB \/ GPU .* — unsure: not modelled, .*stage3_max_reuse_distance.* — may fit A100 80GB — for GPT-2 355M \(.*, named by the launch command\)$/,
    );
    assert.equal(fits!.doesNotFit, false);
    writeFileSync(
      path.join(dir, 'big.json'),
      `// fsdp-studio: model=llama-2-7b gpu=L4-24GB nproc=1\n${readFileSync(ZERO3, 'utf8')}`,
    );
    const tight = launchMemoryNote(specIn('command: deepspeed train.py --deepspeed big.json\n'), read, {});
    assert.equal(tight!.doesNotFit, true, "the command's own --deepspeed names the config");
    assert.match(
      tight!.text,
      /^big\.json: may need about [\d.]+ GiB \(unsure: .*stage3_max_reuse_distance.* not modelled\) per GPU at its peak .* more than L4 24GB has/,
    );
  });

  it('nothing to show without a config, or when it is not there', () => {
    assert.equal(launchMemoryNote(specIn('command: python3 train.py\n'), read, {}), undefined);
    assert.equal(launchMemoryNote(specIn('command: python3 train.py\nconfig: missing.json\n'), read, {}), undefined);
  });
});
