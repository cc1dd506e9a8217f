// Runs documents' analyses on two worker threads (analysis-worker.ts) so the main thread only
// answers requests: one lane for ordinary documents, one for large ones, so that a 100,000-key
// file being checked delays no other document's diagnostics. A document's newer version replaces
// its older one still waiting in a lane (that one's answer is `undefined`: superseded).
import { Worker } from 'node:worker_threads';
import type { ConfigProblem } from '../core/config/schema-problems';
import type { CheckRequest, CheckResult, WorkerOptions } from './analysis-worker';

/** Documents longer than this go to the large lane, and get no main-thread analysis (completion, hover): 256 Ki characters, ten times a long real config. */
export const LARGE_DOCUMENT_CHARS = 256 * 1024;

type Job = { uri: string; request: Omit<CheckRequest, 'id'>; resolve: (p: ConfigProblem[] | undefined) => void };

class Lane {
  private worker: Worker | undefined;
  private running: (Job & { id: number }) | undefined;
  private readonly waiting = new Map<string, Job>();
  private nextId = 1;

  constructor(
    private readonly script: string,
    private readonly options: WorkerOptions,
    private readonly log: (message: string) => void,
  ) {}

  check(uri: string, request: Omit<CheckRequest, 'id'>): Promise<ConfigProblem[] | undefined> {
    return new Promise((resolve) => {
      this.waiting.get(uri)?.resolve(undefined);
      this.waiting.set(uri, { uri, request, resolve });
      this.pump();
    });
  }

  stop(): void {
    void this.worker?.terminate();
    this.worker = undefined;
  }

  private pump(): void {
    if (this.running || this.waiting.size === 0) return;
    const [uri, job] = this.waiting.entries().next().value as [string, Job];
    this.waiting.delete(uri);
    this.running = { ...job, id: this.nextId++ };
    this.ensureWorker().postMessage({ ...job.request, id: this.running.id } satisfies CheckRequest);
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(this.script, { workerData: this.options });
    worker.unref();
    worker.on('message', (r: CheckResult) => {
      const job = this.running;
      if (!job || job.id !== r.id) return;
      this.running = undefined;
      if ('error' in r) {
        this.log(`analysis of ${job.uri} failed: ${r.error}`);
        job.resolve([]);
      } else {
        job.resolve(r.problems);
      }
      this.pump();
    });
    // A thread that dies (out of memory, a native fault) fails its document, and the next one starts afresh.
    const died = (why: string) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      const job = this.running;
      this.running = undefined;
      if (job) {
        this.log(`analysis of ${job.uri} stopped: ${why}`);
        job.resolve([]);
      }
      this.pump();
    };
    worker.on('error', (e) => died(e.stack ?? e.message));
    worker.on('exit', (code) => died(`the analysis thread exited (${code})`));
    this.worker = worker;
    return worker;
  }
}

export class BackgroundChecks {
  private readonly lanes: { ordinary: Lane; large: Lane };

  /** script: the file the worker threads run (this bundle); addonPath: the native runtime for its own check. */
  constructor(script: string, addonPath: string, log: (message: string) => void) {
    const options: WorkerOptions = { role: 'fsdp-analysis', addonPath };
    this.lanes = { ordinary: new Lane(script, options, log), large: new Lane(script, options, log) };
  }

  /** The document's problems, or undefined when a newer version of it replaced this request. */
  check(uri: string, request: Omit<CheckRequest, 'id'>): Promise<ConfigProblem[] | undefined> {
    return (request.text.length > LARGE_DOCUMENT_CHARS ? this.lanes.large : this.lanes.ordinary).check(uri, request);
  }

  stop(): void {
    this.lanes.ordinary.stop();
    this.lanes.large.stop();
  }
}
