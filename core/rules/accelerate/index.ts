// Every accelerate cross-field rule, in the order their problems are listed.
import type { ConfigRule } from '../rule';
import { fileOverrides, offloadNeedsStage, referencedFileChecks, zero3InitFlag } from './deepspeed';
import { cpuRamEfficientLoading, fsdpVersionOptions, hybridShardNeedsWrapping, sizeBasedWrapMinimum } from './fsdp';
import { distributedTypeRequired, multiNodeAddress, processCount, processesPerMachine } from './launch';
import { yaml11Booleans } from './yaml-booleans';

export const accelerateRules: ConfigRule[] = [
  distributedTypeRequired,
  yaml11Booleans,
  processCount,
  multiNodeAddress,
  processesPerMachine,
  cpuRamEfficientLoading,
  fsdpVersionOptions,
  hybridShardNeedsWrapping,
  sizeBasedWrapMinimum,
  fileOverrides,
  zero3InitFlag,
  offloadNeedsStage,
  referencedFileChecks,
];
