// Every DeepSpeed cross-field rule, in the order their problems are listed.
import type { ConfigRule } from '../rule';
import { contiguousCheckpointing } from './activation-checkpointing';
import { autoValues } from './auto-values';
import { batchSizeProduct } from './batch-size';
import { jsonCommentsRule } from './json-comments';
import { lambNeedsDynamicScaling, oneBitWithZero } from './optimizer';
import { ampConflicts, dynamicLossScale, fp16AndBf16, masterWeightsNeedZero } from './precision';
import { schedulerParameters } from './scheduler';
import {
  allreduceSumWithStage3,
  booleanZeroSection,
  nvmeNeedsPath,
  offloadNeedsStage,
  partialOffloadNeedsStage3,
  stage3KeysBelowStage3,
} from './zero';

export const deepspeedRules: ConfigRule[] = [
  batchSizeProduct,
  fp16AndBf16,
  ampConflicts,
  masterWeightsNeedZero,
  dynamicLossScale,
  booleanZeroSection,
  offloadNeedsStage,
  partialOffloadNeedsStage3,
  nvmeNeedsPath,
  stage3KeysBelowStage3,
  allreduceSumWithStage3,
  oneBitWithZero,
  lambNeedsDynamicScaling,
  schedulerParameters,
  contiguousCheckpointing,
  autoValues,
  jsonCommentsRule,
];
