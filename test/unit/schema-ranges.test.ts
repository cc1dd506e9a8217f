// Issue 26, item 1: the run-config schema is the one source of every number's range, for the
// language server and the CLIs (ajv) and for the runtime (native/src/config/schema_reader.h, from the
// schema embedded at build time). A key without a maximum let `batch_size_per_gpu: 4294967300` through
// the editor and, truncated to 32 bits, train at batch 4.
import assert from 'node:assert/strict';
import launchSpecSchema from '../../core/schemas/launch-spec.schema.json';
import { checkRunConfigText, runConfigSchema } from '../../core/config/run-config';
import { formatProblem } from '../../core/config/schema-problems';

type Node = {
  type?: string | string[];
  maximum?: number;
  exclusiveMaximum?: number;
  $ref?: string;
  properties?: Record<string, Node>;
  items?: Node;
  definitions?: Record<string, Node>;
};

/** Every integer key of a schema: [dotted path, node]. */
function integerKeys(schema: Node): Array<[string, Node]> {
  const out: Array<[string, Node]> = [];
  const visit = (node: Node, at: string, seen: Set<string>) => {
    let n = node;
    if (n.$ref) {
      const name = n.$ref.replace('#/definitions/', '');
      if (seen.has(name)) return;
      seen = new Set([...seen, name]);
      n = { ...schema.definitions![name], ...node };
    }
    const types = Array.isArray(n.type) ? n.type : [n.type];
    if (types.includes('integer')) out.push([at, n]);
    for (const [k, child] of Object.entries(n.properties ?? {})) visit(child, at ? `${at}.${k}` : k, seen);
    if (n.items) visit(n.items, `${at}[]`, seen);
  };
  visit(schema, '', new Set());
  return out;
}

describe('number ranges: one source, the schema', () => {
  for (const [name, schema] of [
    ['run config', runConfigSchema],
    ['launch spec', launchSpecSchema],
  ] as const) {
    it(`every integer key of the ${name} schema has a maximum a 32-bit integer holds (the runtime reads int)`, () => {
      const keys = integerKeys(schema as Node);
      assert.ok(keys.length >= 7, `${keys.length} integer keys found`);
      // The seed is the one unsigned 32-bit key; fsdp.zero_stage is an enum of 0..3.
      const missing = keys
        .filter(([, n]) => (n.maximum ?? (n as { enum?: number[] }).enum?.length) === undefined)
        .map(([at]) => at);
      assert.deepEqual(missing, []);
      for (const [at, n] of keys) {
        if (n.maximum === undefined) continue;
        assert.ok(n.maximum <= (at === 'training.seed' ? 2 ** 32 - 1 : 2 ** 31 - 1), `${at}: maximum ${n.maximum}`);
      }
    });
  }

  it('the editor and the CLIs refuse a value beyond the maximum with the key, the value and the limit', () => {
    const text = `model: {d_model: 64, n_layers: 2, n_heads: 4, vocab_size: 256, max_seq_len: 32}
data: {train: data/train.tok}
training: {batch_size_per_gpu: 4294967300, max_steps: 2147483648, learning_rate: 0.001}
launch: {nproc_per_node: 100000}
`;
    const lines = checkRunConfigText(text, 'run.yaml').problems.map((p) => formatProblem('run.yaml', p));
    assert.deepEqual(lines, [
      'run.yaml:3:32 training.batch_size_per_gpu: must be <= 65536, got 4294967300',
      'run.yaml:3:55 training.max_steps: must be <= 1000000000, got 2147483648',
      'run.yaml:4:26 launch.nproc_per_node: must be <= 1024, got 100000',
    ]);
  });
});
