// The server's features. To add one (e.g. the estimator's inline memory display), write
// features/<name>.ts exporting a ServerFeature and add it here.
import { codeActions } from './code-actions';
import { completion } from './completion';
import { dataFileFixes } from './data-file-fixes';
import { diagnostics } from './diagnostics';
import type { ServerFeature } from './feature';
import { hover } from './hover';
import { memoryHints } from './memory-hints';

export const FEATURES: ServerFeature[] = [diagnostics, completion, hover, codeActions, dataFileFixes, memoryHints];
