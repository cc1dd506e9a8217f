// Activation checkpointing: contiguous memory optimisation copies *partitioned* activations into a
// buffer sized by the number of checkpoints.
import { isObject, report, type ConfigRule } from '../rule';

const AC = 'activation_checkpointing';

export const contiguousCheckpointing: ConfigRule = {
  code: 'deepspeed.contiguous-checkpointing',
  why: 'contiguous_memory_optimization copies partitioned activations into one buffer sized by number_checkpoints: DeepSpeed asserts "Contiguous Checkpointing is only available with partitioned activations" and "Must specify the number of layers with contiguous memory checkpointing".',
  source: 'deepspeed/runtime/activation_checkpointing/checkpointing.py: configure',
  check(ctx) {
    const ac = ctx.value[AC];
    if (!isObject(ac) || ac.contiguous_memory_optimization !== true) return [];
    const problems = [];
    if (ac.partition_activations !== true) {
      problems.push(
        report(ctx, this, {
          path: [AC, 'contiguous_memory_optimization'],
          severity: 'error',
          message: 'contiguous_memory_optimization needs partition_activations: true',
          fixes: [
            {
              title: 'Set partition_activations: true',
              preferred: true,
              edits: [{ kind: 'set', path: [AC, 'partition_activations'], value: true }],
            },
          ],
        }),
      );
    }
    if (typeof ac.number_checkpoints !== 'number') {
      problems.push(
        report(ctx, this, {
          path: [AC, 'contiguous_memory_optimization'],
          severity: 'warning',
          message:
            'contiguous_memory_optimization needs number_checkpoints (unless the training script passes num_checkpoints to deepspeed.checkpointing.configure)',
        }),
      );
    }
    return problems;
  },
};
