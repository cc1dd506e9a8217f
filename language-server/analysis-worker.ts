// The body of the server's analysis threads (worker_threads started by background-checks.ts from
// this same bundle): the whole analysis of a document — parse, schema, rules and the native
// runtime's own check, which reads data files — so that nothing a document holds or names (100,000
// keys, a data.train on a slow disk) keeps the server's main thread from answering other requests.
import { readFileSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { analyseConfig } from '../core/config/config-analysis';
import type { ConfigKind } from '../core/config/document-kind';
import type { ConfigProblem } from '../core/config/schema-problems';
import type { AnalysisSettings } from '../core/rules/rule';
import { loadRuntimeValidation } from './runtime-validation';

export interface CheckRequest {
  id: number;
  kind: ConfigKind;
  text: string;
  fileName: string;
  settings: AnalysisSettings;
  /** The editor's copies of other open files, which a config may refer to (accelerate's DeepSpeed file). */
  openFiles: Array<[string, string]>;
}

export type CheckResult = { id: number; problems: ConfigProblem[] } | { id: number; error: string };

export interface WorkerOptions {
  role: 'fsdp-analysis';
  addonPath: string;
}

export function isAnalysisWorker(data: unknown): data is WorkerOptions {
  return typeof data === 'object' && data !== null && (data as WorkerOptions).role === 'fsdp-analysis';
}

/** Answers CheckRequests until the thread is terminated. */
export function runAnalysisWorker(): void {
  const options = workerData as WorkerOptions;
  const runtime = loadRuntimeValidation(options.addonPath);
  parentPort!.on('message', (req: CheckRequest) => {
    let result: CheckResult;
    try {
      const open = new Map(req.openFiles);
      const analysis = analyseConfig(req.kind, req.text, req.fileName, {
        settings: req.settings,
        readFile: (file) => {
          if (open.has(file)) return open.get(file);
          try {
            return readFileSync(file, 'utf8');
          } catch {
            return undefined;
          }
        },
        validateRunConfig: runtime.validateConfig,
      });
      result = { id: req.id, problems: analysis.problems };
    } catch (e) {
      result = { id: req.id, error: (e as Error).stack ?? String(e) };
    }
    parentPort!.postMessage(result);
  });
}
