// An export of a run that started from a Hugging Face folder carries that folder's tokenizer
// (runs/folder/hf-export.ts copyTokenizerFiles): the files save_pretrained writes for a tokenizer,
// through the links the Hugging Face cache makes, and never something that is not a regular file.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { copyTokenizerFiles, fromHfOf } from '../../runs/folder/hf-export';

describe("an export's tokenizer files, from the folder the run started from", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'hf-tokenizer-'));
    mkdirSync(path.join(dir, 'from'));
    mkdirSync(path.join(dir, 'out'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('copies the tokenizer files there are, a cache link followed, and nothing else', () => {
    const from = path.join(dir, 'from');
    writeFileSync(path.join(from, 'tokenizer.json'), '{"model": {}}');
    writeFileSync(path.join(from, 'model.safetensors'), 'weights');
    // The Hugging Face cache: snapshots/<commit>/tokenizer_config.json -> ../../blobs/<sha>.
    writeFileSync(path.join(dir, 'blob'), '{"eos_token": "<|endoftext|>"}');
    symlinkSync(path.join(dir, 'blob'), path.join(from, 'tokenizer_config.json'));
    const config = path.join(dir, 'config.json');
    writeFileSync(config, JSON.stringify({ model: { from_hf: from } }));
    assert.equal(fromHfOf(config), from);
    const copied = copyTokenizerFiles(fromHfOf(config), path.join(dir, 'out'));
    assert.deepEqual(copied, ['tokenizer.json', 'tokenizer_config.json']);
    assert.deepEqual(readdirSync(path.join(dir, 'out')).sort(), ['tokenizer.json', 'tokenizer_config.json']);
    assert.equal(
      readFileSync(path.join(dir, 'out', 'tokenizer_config.json'), 'utf8'),
      '{"eos_token": "<|endoftext|>"}',
    );
  });

  it('copies nothing for a run that did not start from a folder', () => {
    const config = path.join(dir, 'config.json');
    writeFileSync(config, JSON.stringify({ model: { d_model: 32 } }));
    assert.equal(fromHfOf(config), undefined);
    assert.deepEqual(copyTokenizerFiles(undefined, path.join(dir, 'out')), []);
  });

  it('refuses a tokenizer file that is a FIFO, naming it', () => {
    const fifo = path.join(dir, 'from', 'tokenizer.json');
    execFileSync('mkfifo', [fifo]);
    assert.throws(
      () => copyTokenizerFiles(path.join(dir, 'from'), path.join(dir, 'out')),
      new RegExp(`${fifo}: not a regular file`),
    );
  });
});
