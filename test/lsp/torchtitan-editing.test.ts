import assert from 'node:assert/strict';
import type { CompletionItem, MarkupContent } from 'vscode-languageserver-protocol';
import { LanguageServerClient } from './harness/language-server-client';

const labels = (items: CompletionItem[]) => items.map((i) => i.label);
const insertOf = (i: CompletionItem) => (i.textEdit && 'newText' in i.textEdit ? i.textEdit.newText : '');

describe('language server over stdio: a torchtitan TOML config being written', function () {
  this.timeout(60_000);
  let server: LanguageServerClient;

  before(async () => {
    server = await LanguageServerClient.start();
  });
  after(async () => {
    await server?.stop();
  });

  it('completes the keys of a table with their meaning and default, as TOML', async () => {
    const uri = 'file:///work/train.toml';
    const text = '[training]\nlocal_batch_size = 2\n\n[parallelism]\ntensor_parallel_degree = 2\n\n';
    await server.open(uri, text);
    const items = await server.completion(uri, { line: 5, character: 0 });
    assert.ok(labels(items).includes('pipeline_parallel_schedule'), labels(items).join(' '));
    assert.ok(!labels(items).includes('tensor_parallel_degree'), 'a key already there is not offered again');
    assert.ok(!labels(items).includes('local_batch_size'), 'keys of another table are not offered');
    const schedule = items.find((i) => i.label === 'pipeline_parallel_schedule')!;
    assert.equal(insertOf(schedule), 'pipeline_parallel_schedule = ');
    assert.match((schedule.documentation as MarkupContent).value, /Default: `"1F1B"`/);
  });

  it('completes table names in a header, and Literal values with the default marked', async () => {
    const uri = 'file:///work/train2.toml';
    await server.open(uri, '[training]\nsteps = 10\n[activation_checkpoint]\nmode = \n[quantize.li');
    const modes = await server.completion(uri, { line: 3, character: 7 });
    assert.deepEqual(labels(modes), ['"selective"', '"full"', '"memory_budget"', '"none"']);
    assert.equal(modes.find((i) => i.label === '"selective"')!.detail, 'default');
    const tables = await server.completion(uri, { line: 4, character: 12 });
    const linear = tables.find((i) => i.label === 'linear');
    assert.ok(linear, labels(tables).join(' '));
    assert.equal(insertOf(linear), 'linear', 'in a header only the name goes in');
  });

  it("explains a key on hover: torchtitan's own docstring, allowed values and default", async () => {
    const uri = 'file:///work/train3.toml';
    await server.open(uri, '[parallelism]\ndata_parallel_shard_degree = -1\n[model]\nname = "llama3"\n');
    const hover = await server.hover(uri, { line: 1, character: 5 });
    const text = (hover!.contents as MarkupContent).value;
    assert.match(text, /\*\*parallelism\.data_parallel_shard_degree\*\*/);
    assert.match(text, /-1 means leftover ranks will be used/);
    assert.match(text, /Default: `-1`/);
    assert.match(
      text,
      /As torchtitan 0\.2\.2 reads its TOML job config\. torchtitan 0\.3 configures runs with Python functions/,
    );
  });
});
