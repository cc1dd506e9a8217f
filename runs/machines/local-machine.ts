// Runs on this machine: files read directly, growing files followed by watching their folder
// (local-follower.ts), the trainer started in its own session and stopped through its process group.
import { execFile, spawn } from 'node:child_process';
import { closeSync, constants, existsSync, fstatSync, mkdirSync } from 'node:fs';
import { readdir, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { DecoderFactory } from '../watch/decoders/record-decoder';
import {
  LOG_MAX_BYTES,
  MANIFEST_MAX_BYTES,
  openRegularFile,
  openRegularFileForWriting,
  readRegularFile,
} from '../../core/protocol/regular-file';
import { parseRunManifest, type RunManifest } from '../../core/protocol/run-manifest';
import {
  parseRunGroupVerdict,
  RUN_GROUP_CHECK,
  runGroupCheckArgs,
  type RunGroupMark,
  type RunGroupVerdict,
} from '../stop/run-group';
import { detachedStartArgv, manifestEnv } from './detached-start';
import { LocalFollower } from '../watch/transports/local-follower';
import {
  LOCAL,
  type DetachedStart,
  type Follower,
  type FollowHandlers,
  type ListedFile,
  type RunMachine,
  type StartedRun,
  type StopSignal,
} from './run-machine';

/** How stdout.log and stderr.log are opened: appended to (a resume continues them), created if absent. */
const APPEND = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT;

export class LocalMachine implements RunMachine {
  readonly target = LOCAL;

  async readManifest(runDir: string): Promise<RunManifest | undefined> {
    const file = path.join(runDir, 'run.json');
    const bytes = await readRegularFile(file, MANIFEST_MAX_BYTES);
    if (bytes === undefined) return undefined;
    const parsed = parseRunManifest(bytes.toString('utf8'));
    if ('error' in parsed) throw new Error(`${file}: ${parsed.error}`);
    return parsed.manifest;
  }

  async readFile(file: string, maxBytes: number, tail = false): Promise<Buffer> {
    const opened = await openRegularFile(file, LOG_MAX_BYTES);
    if (!opened) throw Object.assign(new Error(`${file} does not exist`), { code: 'ENOENT' });
    try {
      const length = Math.min(maxBytes, opened.size);
      const start = tail ? opened.size - length : 0;
      const buf = Buffer.alloc(length);
      const { bytesRead } = length ? await opened.handle.read(buf, 0, length, start) : { bytesRead: 0 };
      return buf.subarray(0, bytesRead);
    } finally {
      await opened.handle.close();
    }
  }

  async readFileFrom(file: string, offset: number, maxBytes: number): Promise<{ data: Buffer; size: number }> {
    const opened = await openRegularFile(file, LOG_MAX_BYTES);
    if (!opened) return { data: Buffer.alloc(0), size: 0 };
    try {
      const size = opened.size;
      const length = Math.max(0, Math.min(maxBytes, size - offset));
      const buf = Buffer.alloc(length);
      const { bytesRead } = length ? await opened.handle.read(buf, 0, length, offset) : { bytesRead: 0 };
      return { data: buf.subarray(0, bytesRead), size };
    } finally {
      await opened.handle.close();
    }
  }

  async listRunDirs(runsDir: string): Promise<string[]> {
    let names: string[];
    try {
      names = await readdir(runsDir);
    } catch {
      return [];
    }
    return names
      .map((n) => path.join(runsDir, n))
      .filter((d) => existsSync(path.join(d, 'run.json')))
      .sort();
  }

  follow<R>(file: string, decoder: DecoderFactory<R>, offset: number, handlers: FollowHandlers<R>): Follower {
    return new LocalFollower(file, decoder, offset, handlers);
  }

  async listFiles(dir: string, prefix: string, depth: number): Promise<ListedFile[]> {
    const found: ListedFile[] = [];
    const walk = async (d: string, level: number): Promise<void> => {
      let entries;
      try {
        entries = await readdir(d, { withFileTypes: true });
      } catch {
        return;
      }
      for (const e of entries) {
        const p = path.join(d, e.name);
        if (e.isDirectory() && level < depth) await walk(p, level + 1);
        else if (e.isFile() && e.name.startsWith(prefix)) {
          const s = await stat(p).catch(() => undefined);
          if (s) found.push({ path: p, bytes: s.size, mtime: s.mtimeMs / 1000 });
        }
      }
    };
    await walk(dir, 0);
    return found.sort((a, b) => a.path.localeCompare(b.path));
  }

  async start(spec: DetachedStart): Promise<StartedRun> {
    mkdirSync(spec.runDir, { recursive: true });
    // Not through a link put in the run folder: a resume would append to the file behind it.
    const out = openRegularFileForWriting(path.join(spec.runDir, 'stdout.log'), APPEND);
    let err: number;
    try {
      err = openRegularFileForWriting(path.join(spec.runDir, 'stderr.log'), APPEND);
    } catch (e) {
      closeSync(out);
      throw e;
    }
    try {
      // A resume appends: run.json says where this launch's output begins.
      const manifest = { ...spec.manifest, output_from: { stdout: fstatSync(out).size, stderr: fstatSync(err).size } };
      const argv = detachedStartArgv(spec.manifest.run_id, spec.argv);
      // detached: setsid() in the child, so the run has its own session and process group and a
      // window reload, closing the editor or a signal to the editor's group leaves it running.
      const child = spawn(argv[0], argv.slice(1), {
        cwd: spec.cwd,
        detached: true,
        stdio: ['ignore', out, err],
        env: { ...process.env, ...spec.env, ...manifestEnv(manifest) },
      });
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve);
        child.once('error', (e) => reject(new Error(`could not start ${spec.argv[0]}: ${e.message}`)));
      });
      child.unref();
      return { pid: child.pid!, pgid: child.pid! };
    } finally {
      closeSync(out);
      closeSync(err);
    }
  }

  async isAlive(pgid: number): Promise<boolean> {
    if (!Number.isInteger(pgid) || pgid <= 1) return false; // kill(0)/kill(-1) would answer for other processes
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
    if (!existsSync(path.join(runDir, 'run.json')))
      throw new Error(`${runDir} is not a run folder (it has no run.json): not deleted`);
    await rm(runDir, { recursive: true, force: true });
  }

  checkRunGroup(mark: RunGroupMark): Promise<RunGroupVerdict> {
    return new Promise((resolve) => {
      execFile(
        '/bin/sh',
        ['-c', RUN_GROUP_CHECK, 'fsdp-run-group', ...runGroupCheckArgs(mark)],
        { timeout: 60_000, maxBuffer: 1 << 20 },
        (err, stdout, stderr) => {
          resolve(parseRunGroupVerdict(err && !stdout ? `${err.message} ${stderr}` : stdout));
        },
      );
    });
  }

  async signal(pgid: number, signal: StopSignal): Promise<void> {
    if (!Number.isInteger(pgid) || pgid <= 1)
      throw new Error(`refusing to signal process group ${pgid}: never a run's`);
    try {
      process.kill(-pgid, signal);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e;
    }
  }
}
