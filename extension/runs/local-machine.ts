// Runs on this machine: files read directly, metrics.jsonl followed by watching its folder (with a
// slow poll as a safety net, since file watching can miss events on some file systems), the
// trainer started in its own session and stopped through its process group.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, watch, type FSWatcher } from 'node:fs';
import { open, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseRunManifest, type RunManifest } from '../../core/protocol/run-manifest';
import { RunLogReader } from '../../core/protocol/run-log-reader';
import { detachedStartArgv, START_SCRIPT_FAILED } from './detached-start';
import { LOCAL, type DetachedStart, type Follower, type FollowHandlers, type RunMachine, type StartedRun, type StopSignal } from './run-machine';

/** Poll interval when file watching says nothing; watching normally reports within milliseconds. */
const POLL_MS = 1000;

export class LocalMachine implements RunMachine {
  readonly target = LOCAL;

  async readManifest(runDir: string): Promise<RunManifest | undefined> {
    const file = path.join(runDir, 'run.json');
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
    const parsed = parseRunManifest(text);
    if ('error' in parsed) throw new Error(`${file}: ${parsed.error}`);
    return parsed.manifest;
  }

  async readFile(file: string, maxBytes: number, tail = false): Promise<Buffer> {
    const handle = await open(file, 'r');
    try {
      const start = tail ? Math.max(0, (await handle.stat()).size - maxBytes) : 0;
      const buf = Buffer.alloc(maxBytes);
      const { bytesRead } = await handle.read(buf, 0, maxBytes, start);
      return buf.subarray(0, bytesRead);
    } finally {
      await handle.close();
    }
  }

  async listRunDirs(runsDir: string): Promise<string[]> {
    let names: string[];
    try {
      names = await readdir(runsDir);
    } catch {
      return [];
    }
    return names.map((n) => path.join(runsDir, n)).filter((d) => existsSync(path.join(d, 'run.json'))).sort();
  }

  follow(metricsFile: string, offset: number, handlers: FollowHandlers): Follower {
    return new LocalFollower(metricsFile, offset, handlers);
  }

  async start(spec: DetachedStart): Promise<StartedRun> {
    mkdirSync(spec.runDir, { recursive: true });
    const out = openSync(path.join(spec.runDir, 'stdout.log'), 'a');
    const err = openSync(path.join(spec.runDir, 'stderr.log'), 'a');
    try {
      const argv = detachedStartArgv(spec.manifest, path.join(spec.runDir, 'run.json'), spec.argv);
      // detached: setsid() in the child, so the run has its own session and process group and a
      // window reload, closing the editor or a signal to the editor's group leaves it running.
      const child = spawn(argv[0], argv.slice(1), { cwd: spec.cwd, detached: true, stdio: ['ignore', out, err], env: { ...process.env, ...spec.env } });
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve);
        child.once('error', (e) => reject(new Error(`could not start ${spec.argv[0]}: ${e.message}`)));
      });
      child.once('exit', (code) => {
        if (code === START_SCRIPT_FAILED) console.error(`FSDP Studio: could not write ${spec.runDir}/run.json before starting the trainer`);
      });
      child.unref();
      return { pid: child.pid!, pgid: child.pid! };
    } finally {
      closeSync(out);
      closeSync(err);
    }
  }

  async isAlive(pgid: number): Promise<boolean> {
    try {
      process.kill(-pgid, 0);
      return true;
    } catch (e) {
      return (e as NodeJS.ErrnoException).code === 'EPERM';
    }
  }

  async processesAlive(pids: number[], host: string): Promise<boolean | undefined> {
    if (host !== os.hostname()) return undefined;
    return pids.some((pid) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch (e) {
        return (e as NodeJS.ErrnoException).code === 'EPERM';
      }
    });
  }

  async removeRunDir(runDir: string): Promise<void> {
    if (!existsSync(path.join(runDir, 'run.json'))) throw new Error(`${runDir} is not a run folder (it has no run.json): not deleted`);
    await rm(runDir, { recursive: true, force: true });
  }

  async signal(pgid: number, signal: StopSignal): Promise<void> {
    try {
      process.kill(-pgid, signal);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e;
    }
  }
}

class LocalFollower implements Follower {
  private readonly reader: RunLogReader;
  private watcher: FSWatcher | undefined;
  private readonly timer: NodeJS.Timeout;
  private reading = false;
  private again = false;
  private stopped = false;

  constructor(private readonly file: string, offset: number, private readonly handlers: FollowHandlers) {
    this.reader = new RunLogReader(file, offset);
    this.timer = setInterval(() => this.poke(), POLL_MS);
    handlers.connection({ state: 'live' });
    this.poke();
  }

  get offset(): number {
    return this.reader.offset;
  }

  poke(): void {
    if (this.stopped) return;
    this.ensureWatcher();
    if (this.reading) {
      this.again = true;
      return;
    }
    this.reading = true;
    void this.reader
      .read()
      .then((batch) => {
        if (!this.stopped && (batch.entries.length || batch.problems.length)) this.handlers.batch(batch);
      })
      .catch((e: Error) => {
        if (!this.stopped) this.handlers.batch({ entries: [], problems: [{ offset: this.offset, message: `cannot read ${this.file}: ${e.message}`, excerpt: '' }], offset: this.offset });
      })
      .finally(() => {
        this.reading = false;
        if (this.again) {
          this.again = false;
          this.poke();
        }
      });
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    this.watcher?.close();
    this.handlers.connection({ state: 'closed' });
  }

  /** Watches the folder, not the file: the file may not exist yet, or be replaced. */
  private ensureWatcher(): void {
    if (this.watcher) return;
    try {
      this.watcher = watch(path.dirname(this.file), (_event, name) => {
        if (!name || name === path.basename(this.file)) this.poke();
      });
      this.watcher.on('error', () => {
        this.watcher?.close();
        this.watcher = undefined; // the poll keeps going and re-creates it
      });
    } catch {
      /* folder not there yet: the poll retries */
    }
  }
}
