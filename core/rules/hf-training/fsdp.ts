// FSDP through TrainingArguments (transformers/training_args.py: _process_fsdp_args,
// _apply_legacy_fsdp_to_config): `fsdp: true` with everything in fsdp_config is the current form; a
// string or list of options is deprecated, and FSDP1-only strategies need fsdp_config.version 1.
import type { ConfigProblem } from '../../config/schema-problems';
import { closestMatch } from '../../config/did-you-mean';
import { propertyOf, type SchemaNode } from '../../config/schema-walk';
import hfTrainingArgsSchema from '../../schemas/hf-training-args.schema.json';
import { isObject, report, type ConfigRule } from '../rule';

const schema = hfTrainingArgsSchema as SchemaNode;
const FSDP_OPTIONS = [
  'full_shard',
  'shard_grad_op',
  'no_shard',
  'hybrid_shard',
  'hybrid_shard_zero2',
  'offload',
  'auto_wrap',
];
const FSDP1_ONLY = ['no_shard', 'hybrid_shard', 'hybrid_shard_zero2'];
const KNOWN_KEYS = ((propertyOf(schema, 'fsdp_config') as { 'x-known-keys'?: string[] } | undefined)?.[
  'x-known-keys'
] ?? []) as string[];

function fsdpOptions(v: unknown): string[] | undefined {
  if (typeof v === 'string') return /^(true|false)$/i.test(v) ? undefined : v.split(/\s+/).filter(Boolean);
  return Array.isArray(v) ? v.map(String) : undefined;
}

function fsdpOn(v: unknown): boolean {
  return v === true || (typeof v === 'string' && v !== '' && !/^false$/i.test(v)) || (Array.isArray(v) && v.length > 0);
}

export const fsdpOptionsRule: ConfigRule = {
  code: 'hf.fsdp',
  why: 'transformers 5 takes `fsdp: true` and reads everything else from fsdp_config; a string or list of options ("full_shard auto_wrap") still works but is deprecated (removed in v5.20): full_shard becomes reshard_after_forward true, shard_grad_op false, offload cpu_offload; other strategies exist only in FSDP1 (fsdp_config.version 1); an unknown option stops it ("Unknown `fsdp` option").',
  source: 'transformers/training_args.py: TrainingArguments._process_fsdp_args, _apply_legacy_fsdp_to_config',
  check(ctx) {
    const options = fsdpOptions(ctx.value.fsdp);
    if (!options) return [];
    const problems: ConfigProblem[] = [];
    const config = isObject(ctx.value.fsdp_config) ? ctx.value.fsdp_config : {};
    const version = Number(config.version ?? config.fsdp_version ?? 2);
    for (const o of options) {
      if (!FSDP_OPTIONS.includes(o)) {
        const s = closestMatch(o, FSDP_OPTIONS);
        problems.push(
          report(ctx, this, {
            path: ['fsdp'],
            severity: 'error',
            message: `unknown fsdp option "${o}"; transformers knows ${FSDP_OPTIONS.join(', ')}${s ? `; did you mean "${s}"?` : ''}`,
          }),
        );
      } else if (version === 2 && FSDP1_ONLY.includes(o)) {
        problems.push(
          report(ctx, this, {
            path: ['fsdp'],
            severity: 'error',
            message: `fsdp option "${o}" exists only in FSDP1; with FSDP2 (the default, fsdp_config.version 2) use full_shard or shard_grad_op`,
          }),
        );
      }
    }
    if (problems.length) return problems;
    // The current form: fsdp: true with what the options said moved into fsdp_config.
    const edits: Array<{ kind: 'set'; path: string[]; value: unknown }> = [
      { kind: 'set', path: ['fsdp'], value: true },
    ];
    const has = (k: string) => k in config || `fsdp_${k}` in config;
    if (options.includes('full_shard') && !has('reshard_after_forward'))
      edits.push({
        kind: 'set',
        path: ['fsdp_config', 'reshard_after_forward'],
        value: version === 2 ? true : 'full_shard',
      });
    if (options.includes('shard_grad_op') && !has('reshard_after_forward'))
      edits.push({
        kind: 'set',
        path: ['fsdp_config', 'reshard_after_forward'],
        value: version === 2 ? false : 'shard_grad_op',
      });
    if (options.includes('offload') && !has('cpu_offload'))
      edits.push({ kind: 'set', path: ['fsdp_config', 'cpu_offload'], value: true });
    const fixable = typeof ctx.value.fsdp_config !== 'string';
    return [
      report(ctx, this, {
        path: ['fsdp'],
        severity: 'warning',
        message: `fsdp as ${Array.isArray(ctx.value.fsdp) ? 'a list' : 'a string'} of options is deprecated (removed in transformers 5.20): use fsdp: true and fsdp_config`,
        fixes: fixable
          ? [{ title: 'Use fsdp: true with the options in fsdp_config', preferred: true, edits }]
          : undefined,
      }),
    ];
  },
};

export const fsdpConfigKeys: ConfigRule = {
  code: 'hf.fsdp-config',
  why: 'transformers reads a fixed set of fsdp_config keys (a leading "fsdp_" is stripped first) and ignores the rest silently, so a misspelt key does nothing; activation checkpointing under FSDP belongs in fsdp_config (FSDP\'s own), since TrainingArguments\' activation_checkpointing adds a redundant all-gather in the backward pass.',
  source:
    'transformers/training_args.py: TrainingArguments._process_fsdp_args (https://github.com/huggingface/transformers/issues/30404)',
  check(ctx) {
    const problems: ConfigProblem[] = [];
    const config = ctx.value.fsdp_config;
    if (isObject(config)) {
      for (const key of Object.keys(config)) {
        const bare = key.replace(/^fsdp_/, '');
        if (KNOWN_KEYS.includes(bare)) continue;
        const s = closestMatch(bare, KNOWN_KEYS);
        problems.push(
          report(ctx, this, {
            path: ['fsdp_config', key],
            part: 'key',
            severity: 'warning',
            message: `unknown fsdp_config key "${key}" (transformers ignores it)${s ? `; did you mean "${s}"?` : `; known: ${KNOWN_KEYS.join(', ')}`}`,
            fixes:
              s && !(s in config)
                ? [
                    {
                      title: `Rename to ${s}`,
                      preferred: true,
                      edits: [{ kind: 'rename', path: ['fsdp_config', key], to: s }],
                    },
                  ]
                : undefined,
          }),
        );
      }
    }
    const ac = ['activation_checkpointing', 'gradient_checkpointing'].find((k) => ctx.value[k] === true);
    if (ac && fsdpOn(ctx.value.fsdp) && typeof config !== 'string') {
      const inConfig =
        isObject(config) &&
        (config.activation_checkpointing !== undefined || config.fsdp_activation_checkpointing !== undefined);
      problems.push(
        report(ctx, this, {
          path: [ac],
          part: 'key',
          severity: 'warning',
          message: `with FSDP, ${ac} adds a redundant all-gather in the backward pass; set fsdp_config.activation_checkpointing instead`,
          fixes: [
            {
              title: 'Move it to fsdp_config.activation_checkpointing',
              preferred: true,
              edits: inConfig
                ? [{ kind: 'remove', path: [ac] }]
                : [
                    { kind: 'set', path: ['fsdp_config', 'activation_checkpointing'], value: true },
                    { kind: 'remove', path: [ac] },
                  ],
            },
          ],
        }),
      );
    }
    return problems;
  },
};
