// The runs this workspace knows: launched from here, attached to, or found in the workspace's run
// folders. Kept on disk in the workspace's storage (one JSON file, replaced atomically), so a
// reload or a new window of the same workspace lists the same runs — remote ones included, which
// could not be found again otherwise.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { runKey, type RunRef } from './run-watch';

export interface RunRecord extends RunRef {
  runId: string;
  /** The config's name, for display. */
  name?: string;
  /** The config file it was launched from, on this machine. */
  configPath?: string;
  /** When it was launched from here (ms since the epoch); absent for runs found or attached. */
  launchedAt?: number;
  /** The run's process group, as the launcher saw it (run.json has it too). */
  pgid?: number;
  /** When the person pressed Stop on it (ms since the epoch); cleared when it runs again. */
  stopRequestedAt?: number;
  /** A name the person gave it in the runs view, shown instead of the config's name. */
  label?: string;
}

interface RegistryFile {
  v: 1;
  runs: RunRecord[];
}

export class RunRegistry {
  private runs = new Map<string, RunRecord>();

  constructor(private readonly file: string) {
    this.load();
  }

  list(): RunRecord[] {
    return [...this.runs.values()];
  }

  get(key: string): RunRecord | undefined {
    return this.runs.get(key);
  }

  /** Adds or updates a run (fields given replace the stored ones); returns its key. */
  put(record: RunRecord): string {
    const key = runKey(record);
    this.runs.set(key, { ...this.runs.get(key), ...record });
    this.save();
    return key;
  }

  remove(key: string): void {
    if (this.runs.delete(key)) this.save();
  }

  private load(): void {
    let parsed: RegistryFile;
    try {
      parsed = JSON.parse(readFileSync(this.file, 'utf8')) as RegistryFile;
    } catch {
      return; // absent or unreadable: start empty (a broken file is replaced on the next save)
    }
    for (const r of Array.isArray(parsed.runs) ? parsed.runs : []) {
      if (typeof r?.target === 'string' && typeof r.runDir === 'string' && typeof r.runId === 'string')
        this.runs.set(runKey(r), r);
    }
  }

  private save(): void {
    mkdirSync(path.dirname(this.file), { recursive: true });
    const body: RegistryFile = { v: 1, runs: this.list() };
    const tmp = `${this.file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(body, null, 2));
    renameSync(tmp, this.file);
  }
}
