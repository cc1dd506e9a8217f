// Every Hugging Face TrainingArguments / TRL cross-field rule, in the order their problems are listed.
import type { ConfigRule } from '../rule';
import { bestModelStrategies, halfPrecision, trainerMix } from './arguments';
import { deepspeedReference } from './deepspeed';
import { fsdpConfigKeys, fsdpOptionsRule } from './fsdp';

export const hfTrainingRules: ConfigRule[] = [
  halfPrecision,
  bestModelStrategies,
  fsdpOptionsRule,
  fsdpConfigKeys,
  deepspeedReference,
  trainerMix,
];
