import assert from 'node:assert/strict';
import type { MarkupContent } from 'vscode-languageserver-protocol';
import { LanguageServerClient } from './harness/language-server-client';

describe('language server over stdio: a TRL / TrainingArguments YAML being written', function () {
  this.timeout(60_000);
  let server: LanguageServerClient;

  before(async () => {
    server = await LanguageServerClient.start();
  });
  after(async () => {
    await server?.stop();
  });

  it("completes arguments with the library's own help and values of its enums, and explains them on hover", async () => {
    const uri = 'file:///work/sft.yaml';
    const text =
      'model_name_or_path: Qwen/Qwen2.5-0.5B\noutput_dir: out\nper_device_train_batch_size: 2\nlr_scheduler_type: \nwarm';
    await server.open(uri, text);
    const keys = await server.completion(uri, { line: 4, character: 4 });
    const warmup = keys.find((i) => i.label === 'warmup_steps');
    assert.ok(warmup, keys.map((i) => i.label).join(' '));
    assert.match((warmup.documentation as MarkupContent).value, /ratio of total steps/);
    const schedulers = (await server.completion(uri, { line: 3, character: 19 })).map((i) => i.label);
    assert.ok(schedulers.includes('cosine') && schedulers.includes('linear'), schedulers.join(' '));
    const hover = await server.hover(uri, { line: 2, character: 5 });
    assert.match((hover!.contents as MarkupContent).value, /The batch size per device for training/);
  });
});
