import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { checkRunConfigText, resolveRunConfig, type ResolvedRunConfig } from '../../core/config/run-config';
import { parseSourceDocument, type SourceDocument } from '../../core/config/source-document';
import { estimateMemory } from '../../core/memory/estimate';
import type { NotModelled } from '../../core/memory/memory-input';
import { ACCELERATE_KEYS } from '../../core/memory/inputs/accelerate-keys';
import type { ConfigInputResult } from '../../core/memory/inputs/config-input';
import { DEEPSPEED_KEYS } from '../../core/memory/inputs/deepspeed-keys';
import { accelerateInput } from '../../core/memory/inputs/from-accelerate';
import { deepspeedInput } from '../../core/memory/inputs/from-deepspeed';
import { hfTrainingInput } from '../../core/memory/inputs/from-hf-training';
import { fromResolved } from '../../core/memory/inputs/from-run-config';
import { torchtitanInput } from '../../core/memory/inputs/from-torchtitan';
import { HF_TRAINING_KEYS } from '../../core/memory/inputs/hf-training-keys';
import { classOf, entriesOf, type KeyTable } from '../../core/memory/inputs/key-effects';
import {
  accelerateNotModelled,
  deepspeedNotModelled,
  hfNotModelled,
  torchtitanNotModelled,
  type ConfigValue,
} from '../../core/memory/inputs/not-modelled';
import { RUN_CONFIG_KEYS } from '../../core/memory/inputs/run-config-keys';
import { TORCHTITAN_KEYS } from '../../core/memory/inputs/torchtitan-keys';

// Issue 36 item 3: every key of every config kind's schema is modelled (the estimate reads it),
// named as not modelled when set, or declared without a memory effect — in one table per kind beside
// its reader (core/memory/inputs/*-keys.ts). A schema that gains a key fails here until someone decides.

const root = path.resolve(__dirname, '../..');

interface Node {
  $ref?: string;
  properties?: Record<string, Node>;
  anyOf?: Node[];
  oneOf?: Node[];
  allOf?: Node[];
  definitions?: Record<string, Node>;
}

/** Every key of the schema, as a dot-joined path: the properties of properties, down to the leaves. */
function schemaKeys(schema: Node): { leaves: string[]; sections: Set<string> } {
  const defs = schema.definitions ?? {};
  const resolve = (n: Node): Node => {
    let node = n;
    while (node.$ref) node = { ...defs[node.$ref.split('/').pop()!], ...{ ...node, $ref: undefined } };
    return node;
  };
  const leaves: string[] = [];
  const sections = new Set<string>();
  const walk = (n: Node, at: string[]): void => {
    const node = resolve(n);
    const props: Record<string, Node> = { ...node.properties };
    for (const sub of [...(node.anyOf ?? []), ...(node.oneOf ?? []), ...(node.allOf ?? [])])
      Object.assign(props, resolve(sub).properties);
    const keys = Object.keys(props);
    if (!keys.length || at.length > 8) {
      leaves.push(at.join('.'));
      return;
    }
    if (at.length) sections.add(at.join('.'));
    for (const k of keys) walk(props[k], [...at, k]);
  };
  walk(schema, []);
  return { leaves, sections };
}

function schemaOf(file: string): Node {
  return JSON.parse(readFileSync(path.join(root, 'core', 'schemas', file), 'utf8')) as Node;
}

/** The schema's keys no entry of `table` classifies. */
function unclassified(schema: Node, table: KeyTable): string[] {
  return schemaKeys(schema).leaves.filter((k) => !classOf(table, k));
}

/** A config object with `value` at the dot-joined `at`. */
function setAt(target: Record<string, unknown>, at: string, value: unknown): Record<string, unknown> {
  const keys = at.split('.');
  let o = target;
  for (const k of keys.slice(0, -1)) {
    if (!o[k] || typeof o[k] !== 'object') o[k] = {};
    o = o[k] as Record<string, unknown>;
  }
  o[keys[keys.length - 1]] = value;
  return target;
}

function getter(config: Record<string, unknown>): ConfigValue {
  return (p) => {
    let v: unknown = config;
    for (const k of p) v = v !== null && typeof v === 'object' ? (v as Record<string | number, unknown>)[k] : undefined;
    return v;
  };
}

/** `value` whose every property read (at any depth) is recorded in `reads` as a dot-joined path. */
function recording(value: unknown, reads: Set<string>, at: string[] = []): unknown {
  if (value === null || typeof value !== 'object') return value;
  return new Proxy(value, {
    get(target, key, receiver) {
      const v: unknown = Reflect.get(target, key, receiver);
      if (typeof key !== 'string') return v;
      reads.add([...at, key].join('.'));
      return recording(v, reads, [...at, key]);
    },
  });
}

/** Every section of the schema as an empty mapping, so a reader's nested reads reach the proxy. */
function skeleton(schema: Node): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const s of schemaKeys(schema).sections) setAt(out, s, {});
  return out;
}

function merged(base: Record<string, unknown>, values: Record<string, unknown>): Record<string, unknown> {
  const out = structuredClone(base);
  for (const [k, v] of Object.entries(values)) setAt(out, k, v);
  return out;
}

type DocReader = (doc: SourceDocument, fileName: string) => ConfigInputResult;

/** The paths `reader` reads from each of `configs` (the schema's sections present, then the scenario's values). */
function docReads(schema: Node, reader: DocReader, configs: Array<Record<string, unknown>>): Set<string> {
  const reads = new Set<string>();
  for (const values of configs) {
    const config = merged(skeleton(schema), values);
    const doc = parseSourceDocument(JSON.stringify(config), 'json');
    const watched = Object.create(doc, { value: { value: recording(config, reads) } }) as SourceDocument;
    const result = reader(watched, '/w/config.json');
    assert.ok(!('error' in result), 'error' in result ? result.error : '');
  }
  return reads;
}

/** The run config's mapper over the resolved samples (our runtime's model, then a Llama-family one with checkpointing). */
function runConfigReads(): Set<string> {
  const reads = new Set<string>();
  for (const [file, changes] of [
    ['tiny-cpu.yaml', {}],
    ['smollm2-135m-cpu.yaml', { 'activation_checkpointing.enabled': true, 'fsdp.cpu_offload': true }],
    // On a GPU: the CPU backend keeps float32 weights whatever mixed_precision.param_dtype says (only
    // its products' operands are bf16), so the estimate reads param_dtype for a CUDA run alone.
    ['tiny-cpu.yaml', { 'launch.device': 'cuda' }],
  ] as const) {
    const text = readFileSync(path.join(root, 'samples', file), 'utf8');
    const checked = checkRunConfigText(text, path.join(root, 'samples', file));
    const resolved = resolveRunConfig(checked.value as ResolvedRunConfig, path.join(root, 'samples'));
    for (const [k, v] of Object.entries(changes)) setAt(resolved as unknown as Record<string, unknown>, k, v);
    const input = fromResolved(recording(resolved, reads) as ResolvedRunConfig, {}, []);
    assert.notEqual(typeof input, 'string', String(input));
  }
  return reads;
}

const options = { model: 'llama-3-8b' };

const KINDS: Array<{
  kind: string;
  schema: Node;
  table: KeyTable;
  named?: (get: ConfigValue) => NotModelled[];
  reads: () => Set<string>;
}> = [
  { kind: 'run config', schema: schemaOf('run-config.schema.json'), table: RUN_CONFIG_KEYS, reads: runConfigReads },
  {
    kind: 'DeepSpeed',
    schema: schemaOf('deepspeed-config.schema.json'),
    table: DEEPSPEED_KEYS,
    named: deepspeedNotModelled,
    reads: () => docReads(schemaOf('deepspeed-config.schema.json'), (d, f) => deepspeedInput(d, f, options), [{}]),
  },
  {
    kind: 'accelerate',
    schema: schemaOf('accelerate-config.schema.json'),
    table: ACCELERATE_KEYS,
    named: accelerateNotModelled,
    reads: () =>
      docReads(schemaOf('accelerate-config.schema.json'), (d, f) => accelerateInput(d, f, options), [
        { distributed_type: 'FSDP', 'fsdp_config.fsdp_version': 2 },
        { distributed_type: 'DEEPSPEED' },
      ]),
  },
  {
    kind: 'TrainingArguments / TRL',
    schema: schemaOf('hf-training-args.schema.json'),
    table: HF_TRAINING_KEYS,
    named: (get) => hfNotModelled(get),
    reads: () =>
      docReads(schemaOf('hf-training-args.schema.json'), (d, f) => hfTrainingInput(d, f, options), [
        {
          fsdp: 'full_shard',
          fsdp_config: {},
          model_init_kwargs: {},
          use_peft: true,
          load_in_4bit: true,
          max_length: 512,
        },
        { deepspeed: { zero_optimization: { stage: 3 } }, load_in_8bit: true },
      ]),
  },
  {
    kind: 'torchtitan (TOML)',
    schema: schemaOf('torchtitan-config.schema.json'),
    table: TORCHTITAN_KEYS,
    named: torchtitanNotModelled,
    reads: () =>
      docReads(schemaOf('torchtitan-config.schema.json'), (d, f) => torchtitanInput(d, f, {}), [
        { 'parallelism.pipeline_parallel_degree': 2, 'activation_checkpoint.mode': 'selective' },
      ]),
  },
];

describe('every key of every config kind is modelled, named as not modelled, or declared without memory effect', () => {
  for (const { kind, schema, table, named, reads } of KINDS) {
    describe(kind, () => {
      it("classifies every key of the kind's schema", () => {
        assert.deepEqual(unclassified(schema, table), []);
      });

      it('classifies each key once, and only keys (or sections) the schema has', () => {
        const entries = entriesOf(table);
        assert.deepEqual(
          entries.filter((e, i) => entries.indexOf(e) !== i),
          [],
        );
        const { leaves, sections } = schemaKeys(schema);
        assert.deepEqual(
          entries.filter((e) => !leaves.includes(e) && !sections.has(e)),
          [],
        );
        for (const key of Object.keys(table.modelledBefore ?? {})) assert.ok(table.modelled.includes(key), key);
      });

      it('reads every key it calls modelled', () => {
        const read = reads();
        const before = table.modelledBefore ?? {};
        assert.deepEqual(
          table.modelled.filter((k) => !read.has(k) && !(k in before)),
          [],
        );
      });

      it('names each key it calls not modelled when the config sets it, and nothing when nothing is set', () => {
        const notModelled = Object.entries(table.notModelled);
        if (!named) {
          assert.deepEqual(notModelled, [], `${kind} has no not-modelled line to name keys on`);
          return;
        }
        assert.deepEqual(named(getter({})), []);
        for (const [key, { example, with: also }] of notModelled) {
          const config = merged(also ?? {}, { [key]: example });
          const names = named(getter(config));
          const last = key.split('.').pop()!;
          assert.ok(
            names.some((n) => n.key.startsWith(key) || n.key.startsWith(last)),
            `${key}: ${JSON.stringify(example)} is not named (named: ${names.map((n) => n.key).join('; ') || 'nothing'})`,
          );
        }
      });

      it('names nothing for a key it declares without memory effect', () => {
        if (!named) return;
        const { leaves } = schemaKeys(schema);
        for (const leaf of leaves) {
          const c = classOf(table, leaf);
          if (c?.is !== 'none') continue;
          const names = named(getter(setAt({}, leaf, 1)));
          assert.deepEqual(
            names.map((n) => n.key),
            [],
            `${leaf} (${c.why})`,
          );
        }
      });
    });
  }

  it("models the DeepSpeed keys the walk found unread: overlap_comm's second reduce bucket, stage-3 keys without their prefix", () => {
    const ds = (zero: Record<string, unknown>) => {
      const text = JSON.stringify({
        train_micro_batch_size_per_gpu: 1,
        bf16: { enabled: true },
        zero_optimization: zero,
      });
      const read = deepspeedInput(parseSourceDocument(text, 'json'), '/w/ds.json', { ...options, nproc: 4 });
      assert.ok('input' in read, 'error' in read ? read.error : '');
      return read.input;
    };
    const bucket = (zero: Record<string, unknown>) =>
      estimateMemory(ds(zero)).terms.find((t) => t.id === 'comm.reduce-bucket')!.bytes.backward;
    // 2e8 elements of bf16: 4e8 bytes a bucket (llama-3-8b has more parameters than the bucket).
    assert.equal(bucket({ stage: 2, reduce_bucket_size: 2e8 }), 4e8);
    assert.equal(bucket({ stage: 2, reduce_bucket_size: 2e8, overlap_comm: true }), 8e8);
    assert.equal(bucket({ stage: 2, reduce_bucket_size: 2e8, overlap_comm: true, contiguous_gradients: false }), 4e8);
    assert.equal(bucket({ stage: 3, reduce_bucket_size: 2e8, overlap_comm: true }), 4e8);
    const z = ds({
      stage: 3,
      prefetch_bucket_size: 1e7,
      max_live_parameters: 2e8,
      param_persistence_threshold: 10,
    }).zero;
    assert.deepEqual([z.prefetchBucketSize, z.maxLiveParameters, z.paramPersistenceThreshold], [1e7, 2e8, 10]);
    assert.equal(ds({ stage: 3, cpu_offload_param: true }).offload.params, true);
  });

  it('names an evaluation batch only when it is larger than the training batch', () => {
    const keys = (config: Record<string, unknown>) => hfNotModelled(getter(config)).map((n) => n.key);
    assert.deepEqual(keys({ per_device_train_batch_size: 4, per_device_eval_batch_size: 4 }), []);
    assert.deepEqual(keys({ per_device_eval_batch_size: 8 }), []);
    assert.deepEqual(keys({ per_device_train_batch_size: 4, per_device_eval_batch_size: 16 }), [
      'per_device_eval_batch_size: 16',
    ]);
  });

  it("puts what a torchtitan job sets and leaves out on the estimate's input, as the other kinds do", () => {
    const text =
      '[model]\nname = "llama3"\nflavor = "debugmodel"\n[compile]\nenable = true\n[training]\nenable_cpu_offload = true\n';
    const read = torchtitanInput(parseSourceDocument(text, 'toml'), '/w/job.toml', {});
    assert.ok('input' in read, 'error' in read ? read.error : '');
    assert.deepEqual(
      read.input.notModelled?.map((n) => n.key),
      ['compile.enable: true', 'training.enable_cpu_offload: true'],
    );
    const plain = torchtitanInput(parseSourceDocument('[model]\nname = "llama3"\n', 'toml'), '/w/job.toml', {});
    assert.ok('input' in plain && plain.input.notModelled === undefined);
  });

  it('fails on a key the schema gains that no table classifies', () => {
    const schema = schemaOf('deepspeed-config.schema.json');
    const grown: Node = { ...schema, properties: { ...schema.properties, zero_new_buffer_size: {} } };
    assert.deepEqual(unclassified(grown, DEEPSPEED_KEYS), ['zero_new_buffer_size']);
  });

  it('names a QLoRA TRL config under accelerate launch FSDP once per thing, with the key as written', () => {
    const names = hfNotModelled(
      getter({
        use_peft: true,
        torch_compile: true,
        torch_compile_mode: 'max-autotune',
        use_fsdp: true,
        beta: 0.1,
        num_generations: 8,
      }),
    );
    assert.deepEqual(
      names.map((n) => n.key),
      ['use_peft: true', 'torch_compile: true', 'use_fsdp: true', 'beta: 0.1'],
    );
  });
});
