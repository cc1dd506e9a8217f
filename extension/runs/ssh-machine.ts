// Runs on an SSH host. metrics.jsonl is followed by `tail -c +OFFSET -F` over the user's ssh, so
// a reconnect asks for exactly the bytes after the last complete line it has: nothing is lost or
// read twice however often the connection drops. Reconnection backs off and says when it retries.
import type { ChildProcess } from 'node:child_process';
import { parseRunManifest, type RunManifest } from '../../core/protocol/run-manifest';
import { RunLogParser } from '../../core/protocol/run-log-reader';
import type { RemoteWord } from '../../core/remote/remote-command';
import { detachedStartArgv } from './detached-start';
import type { DetachedStart, Follower, FollowHandlers, RunMachine, StartedRun, StopSignal } from './run-machine';
import { runSsh, runSshChecked, spawnSsh, SSH_CONNECTION_FAILED, SshError, type SshSettings } from './ssh';

/** Delays between reconnection attempts, in ms; the last repeats. */
export const RECONNECT_DELAYS_MS = [500, 1000, 2000, 4000, 8000, 15000, 30000];
/** A connection that stayed up this long (or delivered data) resets the backoff. */
const STABLE_MS = 5000;
/** Printed by the remote side once it runs: the connection is up even before any data. */
const READY = 'fsdp-studio-tail-ready';

export class SshMachine implements RunMachine {
  private homeDir: Promise<string> | undefined;

  constructor(readonly target: string, private readonly settings: () => SshSettings) {}

  /** The remote home, asked once: remote paths are stored absolute so a run has one name. */
  home(): Promise<string> {
    this.homeDir ??= runSshChecked(this.target, [{ raw: 'printf %s "$HOME"' }], this.settings(), 'finding the home folder', { timeoutMs: 60_000 }).then((b) => b.toString('utf8'));
    this.homeDir.catch(() => (this.homeDir = undefined));
    return this.homeDir;
  }

  /** A remote path with a leading ~/ made absolute. */
  async absolute(p: string): Promise<string> {
    if (p === '~' || p.startsWith('~/')) return (await this.home()) + p.slice(1);
    return p;
  }

  async readManifest(runDir: string): Promise<RunManifest | undefined> {
    const file = `${runDir}/run.json`;
    // `test -e` first: exit 3 means absent, any other failure is an error worth reporting.
    const r = await runSsh(this.target, [{ raw: 'if test -e' }, { path: file }, { raw: '; then cat --' }, { path: file }, { raw: '; else exit 3; fi' }], this.settings(), { timeoutMs: 60_000 });
    if (r.code === 3) return undefined;
    if (r.code === SSH_CONNECTION_FAILED) throw new SshError(`cannot reach ${this.target} over ssh: ${r.stderr || 'connection failed'}`);
    if (r.code !== 0) throw new SshError(`reading ${file} on ${this.target} failed: ${r.stderr}`);
    const parsed = parseRunManifest(r.stdout.toString('utf8'));
    if ('error' in parsed) throw new Error(`${this.target}:${file}: ${parsed.error}`);
    return parsed.manifest;
  }

  async readFile(file: string, maxBytes: number, tail = false): Promise<Buffer> {
    return runSshChecked(this.target, [tail ? 'tail' : 'head', '-c', String(maxBytes), '--', { path: file }], this.settings(), `reading ${file}`, { timeoutMs: 60_000 });
  }

  async listRunDirs(runsDir: string): Promise<string[]> {
    const out = await runSshChecked(
      this.target,
      [{ raw: 'cd' }, { path: runsDir }, { raw: `2>/dev/null || exit 0; for d in */; do if test -f "$d/run.json"; then printf '%s\\0' "\${d%/}"; fi; done` }],
      this.settings(),
      `listing runs in ${runsDir}`,
      { timeoutMs: 60_000 },
    );
    return out.toString('utf8').split('\0').filter(Boolean).map((name) => `${runsDir.replace(/\/+$/, '')}/${name}`).sort();
  }

  follow(metricsFile: string, offset: number, handlers: FollowHandlers, pid?: number): Follower {
    return new SshFollower(this.target, metricsFile, offset, handlers, this.settings, pid);
  }

  async start(spec: DetachedStart): Promise<StartedRun> {
    // Remote paths in the argv are absolute (see home()): the argv's words are passed literally.
    const argv = detachedStartArgv(spec.manifest, `${spec.runDir}/run.json`, spec.argv);
    const env = Object.entries(spec.env ?? {}).map(([k, v]) => `${k}=${v}`);
    // setsid: the run gets its own session on the host, so it survives this ssh connection. In
    // the non-interactive remote shell a background job is not a group leader, so setsid does not
    // fork and $! is the session's pid.
    // A simple command in the background: a list or a { group } would run in a forked subshell
    // and $! would name that instead.
    const words: RemoteWord[] = [
      { raw: 'mkdir -p --' }, { path: spec.runDir },
      { raw: '&& cd --' }, { path: spec.cwd }, { raw: '|| exit 1;' },
      { raw: 'setsid env' }, ...env, ...argv,
      { raw: '</dev/null >' }, { path: `${spec.runDir}/stdout.log` }, { raw: '2>' }, { path: `${spec.runDir}/stderr.log` },
      { raw: '& echo $!' },
    ];
    const out = await runSshChecked(this.target, words, this.settings(), `starting the trainer in ${spec.runDir}`, { timeoutMs: 60_000 });
    const pid = Number(out.toString().trim());
    if (!Number.isInteger(pid) || pid <= 0) throw new SshError(`starting the trainer on ${this.target} did not report a process id (got ${JSON.stringify(out.toString().trim())})`);
    return { pid, pgid: pid };
  }

  async isAlive(pgid: number): Promise<boolean | undefined> {
    const r = await runSsh(this.target, ['kill', '-s', '0', '--', `-${pgid}`], this.settings(), { timeoutMs: 30_000 });
    if (r.code === SSH_CONNECTION_FAILED) return undefined;
    return r.code === 0;
  }

  async processesAlive(pids: number[], host: string): Promise<boolean | undefined> {
    const ids = pids.filter((p) => Number.isInteger(p) && p > 0).map(String);
    if (ids.length === 0) return false;
    // Exit 3: the host's name is not run.json's (another node of a cluster sharing the folder).
    const r = await runSsh(this.target, [{ raw: 'test "$(hostname)" =' }, host, { raw: '|| exit 3; for p in' }, ...ids, { raw: '; do kill -s 0 "$p" 2>/dev/null && exit 0; done; exit 1' }], this.settings(), { timeoutMs: 30_000 });
    if (r.code === 0) return true;
    if (r.code === 1) return false;
    return undefined;
  }

  async removeRunDir(runDir: string): Promise<void> {
    const r = await runSsh(this.target, [{ raw: 'test -f' }, { path: `${runDir}/run.json` }, { raw: '|| exit 3; rm -rf --' }, { path: runDir }], this.settings(), { timeoutMs: 120_000 });
    if (r.code === 3) throw new SshError(`${this.target}:${runDir} is not a run folder (it has no run.json): not deleted`);
    if (r.code === SSH_CONNECTION_FAILED) throw new SshError(`cannot reach ${this.target} over ssh: ${r.stderr || 'connection failed'}`);
    if (r.code !== 0) throw new SshError(`deleting ${runDir} on ${this.target} failed: ${r.stderr}`);
  }

  async signal(pgid: number, signal: StopSignal): Promise<void> {
    const r = await runSsh(this.target, ['kill', '-s', signal.slice(3), '--', `-${pgid}`], this.settings(), { timeoutMs: 30_000 });
    if (r.code === SSH_CONNECTION_FAILED) throw new SshError(`cannot reach ${this.target} to stop the run: ${r.stderr}`);
  }
}

class SshFollower implements Follower {
  private parser: RunLogParser;
  private child: ChildProcess | undefined;
  private retry: NodeJS.Timeout | undefined;
  private attempt = 0;
  private stopped = false;

  constructor(
    private readonly host: string,
    private readonly file: string,
    offset: number,
    private readonly handlers: FollowHandlers,
    private readonly settings: () => SshSettings,
    private readonly pid: number | undefined,
  ) {
    this.parser = new RunLogParser(offset);
    this.connect();
  }

  get offset(): number {
    return this.parser.offset;
  }

  /** tail delivers appended bytes as they come; there is nothing to read early. */
  poke(): void {}

  stop(): void {
    this.stopped = true;
    clearTimeout(this.retry);
    this.child?.kill('SIGTERM');
    this.handlers.connection({ state: 'closed' });
  }

  private connect(): void {
    this.handlers.connection({ state: 'connecting' });
    // A fresh parser at the last complete line: a partial line from the dropped connection is
    // read again whole, never glued to what the new connection sends.
    this.parser = new RunLogParser(this.parser.offset);
    const parser = this.parser;
    const startedAt = Date.now();
    let stable = false;
    let stderr = '';
    let child: ChildProcess;
    try {
      child = spawnSsh(
        this.host,
        // --pid: a tail orphaned by a dropped connection ends with the run instead of lingering.
        [{ raw: `echo ${READY} >&2; exec tail -c` }, `+${parser.offset + 1}`, '-F', ...(this.pid ? [`--pid=${this.pid}`] : []), '--', { path: this.file }],
        this.settings(),
        ['-o', 'Compression=yes'], // metrics are JSON text: an order of magnitude less to send
      );
    } catch (e) {
      this.scheduleReconnect((e as Error).message);
      return;
    }
    this.child = child;
    child.stdout!.on('data', (chunk: Buffer) => {
      if (this.stopped || parser !== this.parser) return;
      stable = true;
      const batch = parser.push(chunk);
      if (batch.entries.length || batch.problems.length) this.handlers.batch(batch);
    });
    child.stderr!.on('data', (b: Buffer) => {
      stderr += b.toString();
      if (stderr.includes(READY)) {
        stderr = stderr.replace(`${READY}\n`, '');
        this.handlers.connection({ state: 'live' });
      }
      if (stderr.length > 8000) stderr = stderr.slice(-4000);
    });
    child.once('error', (e) => stderr += e.message);
    child.once('close', (code) => {
      if (this.child === child) this.child = undefined;
      if (this.stopped) return;
      if (stable || Date.now() - startedAt > STABLE_MS) this.attempt = 0;
      const why = lastLine(stderr) || (code === SSH_CONNECTION_FAILED ? 'connection closed' : `tail exited with code ${code}`);
      this.scheduleReconnect(why);
    });
  }

  private scheduleReconnect(reason: string): void {
    const delay = RECONNECT_DELAYS_MS[Math.min(this.attempt, RECONNECT_DELAYS_MS.length - 1)];
    this.attempt++;
    this.handlers.connection({ state: 'reconnecting', attempt: this.attempt, retryAt: Date.now() + delay, reason });
    this.retry = setTimeout(() => {
      if (!this.stopped) this.connect();
    }, delay);
  }
}

function lastLine(text: string): string {
  return text.trim().split('\n').filter((l) => !l.includes('has become inaccessible') && !l.includes('has appeared')).pop()?.trim() ?? '';
}
