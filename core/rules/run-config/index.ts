// Every run config cross-field rule, in the order their problems are listed.
import type { ConfigRule } from '../rule';
import {
  checkpointIntervalWithinRun,
  checkpointingPolicyNeedsEnabled,
  fp16NeedsLossScaling,
  sequenceFitsModel,
} from './model-and-schedule';
import {
  hostsMatchNodes,
  slurmDirectivesOwnKeys,
  slurmGpusPerTask,
  slurmOrHosts,
  slurmSignalWithinLimit,
} from './cluster';
import { accumulationWithCpuOffload, hybridShardOneNode, shardingWithOneRank } from './parallelism';
import { learningRateTooHigh } from './optimizer';
import { runtimeRejects } from './runtime';

/** Rules on the config as written (they tolerate schema errors). */
export const runConfigRules: ConfigRule[] = [
  sequenceFitsModel,
  shardingWithOneRank,
  hybridShardOneNode,
  accumulationWithCpuOffload,
  fp16NeedsLossScaling,
  checkpointingPolicyNeedsEnabled,
  checkpointIntervalWithinRun,
  learningRateTooHigh,
  slurmOrHosts,
  hostsMatchNodes,
  slurmGpusPerTask,
  slurmDirectivesOwnKeys,
  slurmSignalWithinLimit,
];

/** Rules that need a schema-valid config. */
export const validRunConfigRules: ConfigRule[] = [runtimeRejects];
