// Generated configs with many keys, as the scale tests and `npm run bench:lsp` use them: the shapes
// that were quadratic (many unknown keys: one problem each; many keys in one mapping: YAML's
// duplicate-key check) and ones that are big but clean (DeepSpeed compression groups, a run
// config's SLURM directives).
import type { ConfigKind } from '../../core/config/document-kind';

export type LargeConfigShape =
  'run-config-unknown-keys' | 'run-config-valid' | 'deepspeed-unknown-keys' | 'deepspeed-groups' | 'accelerate-mapping';

export function largeConfig(shape: LargeConfigShape, keys: number): { kind: ConfigKind; text: string; file: string } {
  switch (shape) {
    case 'run-config-unknown-keys': {
      const lines = [
        'model:',
        '  d_model: 32',
        '  n_layers: 2',
        '  n_heads: 2',
        '  vocab_size: 256',
        '  max_seq_len: 32',
        'data:',
        '  train: x.tok',
        'training:',
        '  batch_size_per_gpu: 4',
        '  max_steps: 5',
        '  learning_rate: 0.001',
      ];
      for (let i = 0; i < keys; i++) lines.push(`  extra_${i}: ${i}`);
      return { kind: 'run-config', text: lines.join('\n') + '\n', file: '/cfg/large.fsdp.yaml' };
    }
    case 'run-config-valid': {
      // Big and clean, so the estimate and the plan are made: a SLURM job with many directives.
      const lines = [
        'model:',
        '  d_model: 32',
        '  n_layers: 2',
        '  n_heads: 2',
        '  vocab_size: 256',
        '  max_seq_len: 32',
        'data:',
        '  train: x.tok',
        'training:',
        '  batch_size_per_gpu: 4',
        '  max_steps: 5',
        '  learning_rate: 0.001',
        'launch:',
        '  slurm:',
        '    extra_directives:',
      ];
      for (let i = 0; i < keys; i++) lines.push(`      - --comment=directive-${i}`);
      return { kind: 'run-config', text: lines.join('\n') + '\n', file: '/cfg/valid.fsdp.yaml' };
    }
    case 'deepspeed-unknown-keys': {
      const o: Record<string, unknown> = { train_micro_batch_size_per_gpu: 4 };
      for (let i = 0; i < keys; i++) o[`unknown_key_${i}`] = i;
      return { kind: 'deepspeed', text: JSON.stringify(o, null, 2), file: '/cfg/ds_config.json' };
    }
    case 'deepspeed-groups': {
      // Each group holds four keys (its name, params and two inside params).
      const groups: Record<string, unknown> = {};
      for (let i = 0; i < keys / 4; i++)
        groups[`wq${i}`] = { params: { start_bits: 8, target_bits: 4 }, modules: [`layer.${i}.attention`] };
      const config = {
        train_micro_batch_size_per_gpu: 4,
        zero_optimization: { stage: 3 },
        compression_training: {
          weight_quantization: { shared_parameters: { enabled: true }, different_groups: groups },
        },
      };
      return { kind: 'deepspeed', text: JSON.stringify(config, null, 2), file: '/cfg/ds_config.json' };
    }
    case 'accelerate-mapping': {
      const lines = [
        'compute_environment: LOCAL_MACHINE',
        'distributed_type: FSDP',
        'num_processes: 2',
        'fsdp_config:',
        '  fsdp_sharding_strategy: FULL_SHARD',
        'extra:',
      ];
      for (let i = 0; i < keys; i++) lines.push(`  k${i}: ${i}`);
      return { kind: 'accelerate', text: lines.join('\n') + '\n', file: '/cfg/accelerate_config.yaml' };
    }
  }
}
