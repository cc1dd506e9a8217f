// Every torchtitan cross-field rule, in the order their problems are listed.
import type { ConfigRule } from '../rule';
import { globalBatchSize } from './batch-size';
import { contextParallelSequence, float8WithCompile, selectiveCheckpointOption } from './features';
import { expertParallel, worldSizeProduct } from './parallel-degrees';
import { pipelineSchedule } from './pipeline';

export const torchtitanRules: ConfigRule[] = [
  worldSizeProduct,
  expertParallel,
  globalBatchSize,
  pipelineSchedule,
  contextParallelSequence,
  float8WithCompile,
  selectiveCheckpointOption,
];
