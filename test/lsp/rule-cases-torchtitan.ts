// torchtitan job configs (TOML): one case per schema check and rule, as in rule-cases.ts.
import type { RuleCase } from './rule-cases';

// A small torchtitan config on 8 ranks: 2-way tensor parallel, the rest FSDP.
const TT = `# fsdp-studio: nproc=8
[model]
name = "llama3"
flavor = "8B"

[training]
local_batch_size = 2
seq_len = 4096
steps = 100

[parallelism]
data_parallel_shard_degree = -1
tensor_parallel_degree = 2

[activation_checkpoint]
mode = "selective"
selective_ac_option = "op"
`;
const tt = (extra: string) => TT + extra;
const at = (find: string, replace: string) => TT.replace(find, replace);

export const TORCHTITAN_RULE_CASES: RuleCase[] = [
  {
    name: 'a misspelt key, with did-you-mean',
    file: 'typo.toml',
    code: 'schema.unknown-key',
    severity: 'error',
    fixes: 1,
    marked: at('tensor_parallel_degree = 2', '⟪tensor_paralel_degree⟫ = 2'),
    clean: TT,
  },
  {
    name: 'a misspelt section',
    file: 'section.toml',
    code: 'schema.unknown-key',
    severity: 'error',
    fixes: 1,
    marked: tt('\n[⟪compiel⟫]\nenable = true\n'),
    clean: tt('\n[compile]\nenable = true\n'),
  },
  {
    name: 'a string where a number goes',
    file: 'type.toml',
    code: 'schema.type',
    severity: 'error',
    marked: at('steps = 100', 'steps = ⟪"100"⟫'),
    clean: TT,
  },
  {
    name: 'a value outside a Literal',
    file: 'enum.toml',
    code: 'schema.enum',
    severity: 'error',
    fixes: 1,
    marked: at('mode = "selective"', 'mode = ⟪"selectve"⟫'),
    clean: TT,
  },
  {
    name: 'a degree below 1',
    file: 'range.toml',
    code: 'schema.range',
    severity: 'error',
    marked: at('tensor_parallel_degree = 2', 'tensor_parallel_degree = ⟪0⟫'),
    clean: TT,
  },
  {
    name: 'a deprecated key',
    file: 'deprecated.toml',
    code: 'schema.deprecated',
    severity: 'warning',
    fixes: 1,
    marked: at('flavor = "8B"', 'flavor = "8B"\n⟪tokenizer_path⟫ = "./assets/tokenizer"'),
    clean: at('flavor = "8B"', 'flavor = "8B"\nhf_assets_path = "./assets/tokenizer"'),
  },
  {
    name: 'degrees whose product is not the world size',
    file: 'world.toml',
    code: 'torchtitan.world-size',
    severity: 'error',
    fixes: 1,
    marked: at('data_parallel_shard_degree = -1', 'data_parallel_shard_degree = ⟪2⟫'),
    clean: at('data_parallel_shard_degree = -1', 'data_parallel_shard_degree = 4'),
  },
  {
    name: 'degrees that do not divide the world size',
    file: 'world-divide.toml',
    code: 'torchtitan.world-size',
    severity: 'error',
    marked: at('tensor_parallel_degree = 2', 'tensor_parallel_degree = 2\npipeline_parallel_degree = 3')
      .replace('data_parallel_shard_degree', '⟪data_parallel_shard_degree⟫')
      .replace('local_batch_size = 2', 'local_batch_size = 4'),
    clean: at('tensor_parallel_degree = 2', 'tensor_parallel_degree = 2\npipeline_parallel_degree = 2'),
  },
  {
    name: 'a shard degree of 0',
    file: 'shard-zero.toml',
    code: 'torchtitan.world-size',
    severity: 'error',
    fixes: 1,
    marked: at('data_parallel_shard_degree = -1', 'data_parallel_shard_degree = ⟪0⟫'),
    clean: TT,
  },
  {
    name: 'expert parallel that does not divide its ranks',
    file: 'ep.toml',
    code: 'torchtitan.expert-parallel',
    severity: 'error',
    marked: at('tensor_parallel_degree = 2', 'tensor_parallel_degree = 2\n⟪expert_parallel_degree⟫ = 16').replace(
      '⟪expert_parallel_degree⟫ = 16',
      'expert_parallel_degree = ⟪16⟫',
    ),
    clean: at('tensor_parallel_degree = 2', 'tensor_parallel_degree = 2\nexpert_parallel_degree = 8'),
  },
  {
    name: 'a global batch that is not local × data parallel × steps',
    file: 'global.toml',
    code: 'torchtitan.global-batch',
    severity: 'error',
    fixes: 1,
    marked: at('local_batch_size = 2', 'local_batch_size = 2\nglobal_batch_size = ⟪20⟫'),
    clean: at('local_batch_size = 2', 'local_batch_size = 2\nglobal_batch_size = 32'),
  },
  {
    name: 'an unknown pipeline schedule',
    file: 'schedule.toml',
    code: 'torchtitan.pipeline-schedule',
    severity: 'error',
    fixes: 1,
    marked: at(
      'tensor_parallel_degree = 2',
      'tensor_parallel_degree = 2\npipeline_parallel_degree = 2\npipeline_parallel_schedule = ⟪"Interleaved1FB"⟫',
    ).replace('local_batch_size = 2', 'local_batch_size = 4'),
    clean: at(
      'tensor_parallel_degree = 2',
      'tensor_parallel_degree = 2\npipeline_parallel_degree = 2\npipeline_parallel_schedule = "Interleaved1F1B"',
    ).replace('local_batch_size = 2', 'local_batch_size = 4'),
  },
  {
    name: 'a local batch that does not split into pipeline micro-batches',
    file: 'microbatch.toml',
    code: 'torchtitan.pipeline-schedule',
    severity: 'error',
    fixes: 1,
    marked: at('local_batch_size = 2', 'local_batch_size = 6').replace(
      'tensor_parallel_degree = 2',
      'tensor_parallel_degree = 2\npipeline_parallel_degree = 2\npipeline_parallel_microbatch_size = ⟪4⟫',
    ),
    clean: at('local_batch_size = 2', 'local_batch_size = 8').replace(
      'tensor_parallel_degree = 2',
      'tensor_parallel_degree = 2\npipeline_parallel_degree = 2\npipeline_parallel_microbatch_size = 4',
    ),
  },
  {
    name: '1F1B with fewer micro-batches than stages',
    file: 'bubble.toml',
    code: 'torchtitan.pipeline-schedule',
    severity: 'error',
    marked: at(
      'tensor_parallel_degree = 2',
      'tensor_parallel_degree = 1\npipeline_parallel_degree = 4\n⟪pipeline_parallel_microbatch_size⟫ = 1',
    ).replace('⟪pipeline_parallel_microbatch_size⟫ = 1', 'pipeline_parallel_microbatch_size = ⟪1⟫'),
    clean: at('local_batch_size = 2', 'local_batch_size = 4').replace(
      'tensor_parallel_degree = 2',
      'tensor_parallel_degree = 1\npipeline_parallel_degree = 4\npipeline_parallel_microbatch_size = 1',
    ),
  },
  {
    name: 'float8 without torch.compile',
    file: 'float8.toml',
    code: 'torchtitan.float8',
    severity: 'warning',
    fixes: 1,
    marked: at('flavor = "8B"', 'flavor = "8B"\nconverters = ⟪["float8"]⟫'),
    clean: at('flavor = "8B"', 'flavor = "8B"\nconverters = ["float8"]') + '\n[compile]\nenable = true\n',
  },
  {
    name: 'float8 emulation with torch.compile',
    file: 'float8-emulate.toml',
    code: 'torchtitan.float8',
    severity: 'error',
    fixes: 1,
    marked:
      at('flavor = "8B"', 'flavor = "8B"\nconverters = ["float8"]') +
      '\n[compile]\nenable = true\n\n[quantize.linear.float8]\nemulate = ⟪true⟫\n',
    clean:
      at('flavor = "8B"', 'flavor = "8B"\nconverters = ["float8"]') +
      '\n[compile]\nenable = true\n\n[quantize.linear.float8]\nemulate = false\n',
  },
  {
    name: 'float8 settings without the float8 converter',
    file: 'float8-off.toml',
    code: 'torchtitan.float8',
    severity: 'warning',
    fixes: 1,
    marked: tt('\n[compile]\nenable = true\n\n[quantize.linear.float8]\n⟪enable_fsdp_float8_all_gather⟫ = true\n'),
    clean: tt('\n[compile]\nenable = true\n\n[quantize.linear.float8]\nenable_fsdp_float8_all_gather = false\n'),
  },
  {
    name: 'context parallel with a sequence that does not split',
    file: 'cp.toml',
    code: 'torchtitan.context-parallel',
    severity: 'error',
    fixes: 1,
    marked: at('seq_len = 4096', 'seq_len = ⟪4100⟫').replace(
      'tensor_parallel_degree = 2',
      'tensor_parallel_degree = 2\ncontext_parallel_degree = 4',
    ),
    clean: at('tensor_parallel_degree = 2', 'tensor_parallel_degree = 2\ncontext_parallel_degree = 4'),
  },
  {
    name: 'a selective checkpointing option torchtitan refuses',
    file: 'sac.toml',
    code: 'torchtitan.selective-ac',
    severity: 'error',
    fixes: 1,
    marked: at('selective_ac_option = "op"', 'selective_ac_option = ⟪"every"⟫'),
    clean: at('selective_ac_option = "op"', 'selective_ac_option = "2"'),
  },
];
