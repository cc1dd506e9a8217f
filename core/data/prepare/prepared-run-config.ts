// The run config "FSDP: Prepare training data…" offers once a preparation is done: a small model
// on this machine's CPU whose vocabulary is the tokenizer's and whose data are the files just made,
// named relative to the config, so a person goes from text to a first run in one step. The model
// is the runtime's GPT (the architecture it trains today); its size is the person's to change.
import path from 'node:path';
import type { PrepareStats } from './prepare-data';

export function preparedRunConfigText(stats: PrepareStats, dataDir: string, configDir: string): string {
  const rel = (file: string) => {
    const r = path.relative(configDir, path.join(dataDir, file)).split(path.sep).join('/');
    return r.startsWith('.') ? r : `./${r}`;
  };
  const name = path.basename(dataDir).replace(/[^A-Za-z0-9._-]/g, '-') || 'my-text';
  return [
    `# A first run on the text prepared in ${rel('.')} (${stats.train.tokens} training tokens, tokenizer`,
    `# ${stats.tokenizer}, vocabulary ${stats.vocab_size}). A small model on this machine's CPU: make it`,
    '# larger, or set launch.device: cuda, once it trains.',
    `name: ${name}`,
    'model:',
    '  d_model: 256',
    '  n_layers: 4',
    '  n_heads: 4',
    `  vocab_size: ${stats.vocab_size}  # the tokenizer's: every id in the token files is below it`,
    '  max_seq_len: 256',
    'data:',
    `  train: ${rel('train.tok')}`,
    ...(stats.val.file ? [`  val: ${rel(stats.val.file)}`] : ['  # no val.tok: too few documents for --val-fraction']),
    '  seq_len: 256',
    'training:',
    '  batch_size_per_gpu: 8',
    '  max_steps: 200',
    '  learning_rate: 0.001',
    '  schedule: warmup_cosine',
    '  warmup_steps: 20',
    'checkpointing:',
    '  save_every_n_steps: 100',
    'logging:',
    '  every_n_steps: 1',
    ...(stats.val.file ? ['  eval_every_n_steps: 50', '  eval_batches: 4'] : []),
    'launch:',
    '  target: local',
    '  device: cpu',
    '  nproc_per_node: 1',
    '',
  ].join('\n');
}
