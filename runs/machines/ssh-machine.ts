// Runs on an SSH host, through the user's own ssh. Growing files are followed by a reconnecting
// `tail -c +OFFSET -F` (ssh-follower.ts), so nothing is lost or read twice however often the
// connection drops.
import type { DecoderFactory } from '../watch/decoders/record-decoder';
import { MANIFEST_MAX_BYTES, RefusedFile } from '../../core/protocol/regular-file';
import { parseRunManifest, type RunManifest } from '../../core/protocol/run-manifest';
import type { RemoteWord } from '../../core/remote/remote-command';
import {
  parseRunGroupVerdict,
  RUN_GROUP_CHECK,
  runGroupCheckArgs,
  type RunGroupMark,
  type RunGroupVerdict,
} from '../stop/run-group';
import { detachedStartArgv, manifestEnv } from './detached-start';
import type {
  DetachedStart,
  Follower,
  FollowHandlers,
  ListedFile,
  RunMachine,
  StartedRun,
  StopSignal,
} from './run-machine';
import { runSsh, runSshChecked, SSH_CONNECTION_FAILED, SshError, type SshSettings } from './ssh';
import { SshFollower } from '../watch/transports/ssh-follower';

export class SshMachine implements RunMachine {
  private homeDir: Promise<string> | undefined;

  constructor(
    readonly target: string,
    private readonly settings: () => SshSettings,
  ) {}

  /** The remote home, asked once: remote paths are stored absolute so a run has one name. */
  home(): Promise<string> {
    this.homeDir ??= runSshChecked(
      this.target,
      [{ raw: 'printf %s "$HOME"' }],
      this.settings(),
      'finding the home folder',
      { timeoutMs: 60_000 },
    ).then((b) => b.toString('utf8'));
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
    // Exit 3: absent; 4: not a regular file; 5: too large (core/protocol/regular-file.ts's rules,
    // asked of the host before a byte is read). Any other failure is an error worth reporting.
    const r = await runSsh(
      this.target,
      [
        ...onlyRegular(file),
        { raw: '; size=$(wc -c <' },
        { path: file },
        {
          raw: `) && if test "$size" -gt ${MANIFEST_MAX_BYTES}; then echo "$size" >&2; exit 5; fi; head -c ${MANIFEST_MAX_BYTES} --`,
        },
        { path: file },
      ],
      this.settings(),
      { timeoutMs: 60_000 },
    );
    if (r.code === 3) return undefined;
    if (r.code === SSH_CONNECTION_FAILED)
      throw new SshError(`cannot reach ${this.target} over ssh: ${r.stderr || 'connection failed'}`);
    if (r.code === 4)
      throw new RefusedFile(`${this.target}:${file}`, 'is not a regular file (a FIFO, a device or a folder)');
    if (r.code === 5)
      throw new RefusedFile(
        `${this.target}:${file}`,
        `is ${r.stderr.trim()} bytes, more than the ${MANIFEST_MAX_BYTES} bytes a file of its kind may be`,
      );
    if (r.code !== 0) throw new SshError(`reading ${file} on ${this.target} failed: ${r.stderr}`);
    const parsed = parseRunManifest(r.stdout.toString('utf8'));
    if ('error' in parsed) throw new Error(`${this.target}:${file}: ${parsed.error}`);
    return parsed.manifest;
  }

  async readFile(file: string, maxBytes: number, tail = false): Promise<Buffer> {
    const r = await runSsh(
      this.target,
      [...onlyRegular(file), { raw: ';' }, tail ? 'tail' : 'head', '-c', String(maxBytes), '--', { path: file }],
      this.settings(),
      { timeoutMs: 60_000 },
    );
    if (r.code === 4)
      throw new RefusedFile(`${this.target}:${file}`, 'is not a regular file (a FIFO, a device or a folder)');
    if (r.code === 3) throw Object.assign(new SshError(`${this.target}:${file} does not exist`), { code: 'ENOENT' });
    if (r.code === SSH_CONNECTION_FAILED)
      throw new SshError(`cannot reach ${this.target} over ssh: ${r.stderr || 'connection failed'}`);
    if (r.code !== 0) throw new SshError(`reading ${file} on ${this.target} failed: ${r.stderr}`);
    return r.stdout;
  }

  async readFileFrom(file: string, offset: number, maxBytes: number): Promise<{ data: Buffer; size: number }> {
    const from = Math.max(0, Math.floor(offset)) + 1;
    const max = Math.max(0, Math.floor(maxBytes));
    // The size on the first line, then the bytes; an absent file prints size 0 and nothing.
    const r = await runSsh(
      this.target,
      [
        { raw: 'if ! test -e' },
        { path: file },
        { raw: '; then echo 0; exit 0; fi;' },
        ...onlyRegular(file),
        { raw: '; wc -c <' },
        { path: file },
        { raw: `&& tail -c +${from} --` },
        { path: file },
        { raw: `| head -c ${max}` },
      ],
      this.settings(),
      { timeoutMs: 60_000 },
    );
    if (r.code === 4)
      throw new RefusedFile(`${this.target}:${file}`, 'is not a regular file (a FIFO, a device or a folder)');
    if (r.code === SSH_CONNECTION_FAILED)
      throw new SshError(`cannot reach ${this.target} over ssh: ${r.stderr || 'connection failed'}`);
    if (r.code !== 0) throw new SshError(`reading ${file} on ${this.target} failed: ${r.stderr}`);
    const out = r.stdout;
    const nl = out.indexOf(10);
    const size =
      Number(
        out
          .subarray(0, nl < 0 ? out.length : nl)
          .toString('utf8')
          .trim(),
      ) || 0;
    return { data: nl < 0 ? Buffer.alloc(0) : out.subarray(nl + 1), size };
  }

  async listRunDirs(runsDir: string): Promise<string[]> {
    const out = await runSshChecked(
      this.target,
      [
        { raw: 'cd' },
        { path: runsDir },
        {
          raw: `2>/dev/null || exit 0; for d in */; do if test -f "$d/run.json"; then printf '%s\\0' "\${d%/}"; fi; done`,
        },
      ],
      this.settings(),
      `listing runs in ${runsDir}`,
      { timeoutMs: 60_000 },
    );
    return out
      .toString('utf8')
      .split('\0')
      .filter(Boolean)
      .map((name) => `${runsDir.replace(/\/+$/, '')}/${name}`)
      .sort();
  }

  follow<R>(
    file: string,
    decoder: DecoderFactory<R>,
    offset: number,
    handlers: FollowHandlers<R>,
    pid?: number,
  ): Follower {
    // Text (metrics.jsonl) compresses by an order of magnitude; TensorBoard records little.
    return new SshFollower(this.target, file, decoder, offset, handlers, this.settings, {
      pid,
      compress: file.endsWith('.jsonl'),
    });
  }

  async listFiles(dir: string, prefix: string, depth: number): Promise<ListedFile[]> {
    // find prints "path\0size\0mtime\0" per file; a folder that is not there lists nothing.
    const r = await runSsh(
      this.target,
      [
        { raw: 'test -d' },
        { path: dir },
        { raw: '|| exit 0; find' },
        { path: dir },
        '-maxdepth',
        String(depth + 1),
        '-type',
        'f',
        '-name',
        `${prefix}*`,
        '-printf',
        '%p\\0%s\\0%T@\\0',
      ],
      this.settings(),
      { timeoutMs: 60_000 },
    );
    if (r.code === SSH_CONNECTION_FAILED)
      throw new SshError(`cannot reach ${this.target} over ssh: ${r.stderr || 'connection failed'}`);
    if (r.code !== 0) throw new SshError(`listing ${dir} on ${this.target} failed: ${r.stderr}`);
    const fields = r.stdout.toString('utf8').split('\0');
    const found: ListedFile[] = [];
    for (let i = 0; i + 2 < fields.length; i += 3)
      found.push({ path: fields[i], bytes: Number(fields[i + 1]), mtime: Number(fields[i + 2]) });
    return found.sort((a, b) => a.path.localeCompare(b.path));
  }

  async start(spec: DetachedStart): Promise<StartedRun> {
    // Remote paths in the argv are absolute (see home()): the argv's words are passed literally.
    // The output files are started afresh on the host: this launch's output begins at 0. They are
    // removed first, so that `>` creates them and never writes through a link (or into a FIFO or a
    // device) put in their place (issue 40, item 2).
    const argv = detachedStartArgv(spec.manifest.run_id, spec.argv);
    const env = Object.entries({
      ...spec.env,
      ...manifestEnv({ ...spec.manifest, output_from: { stdout: 0, stderr: 0 } }),
    }).map(([k, v]) => `${k}=${v}`);
    // setsid: the run gets its own session on the host, so it survives this ssh connection. In
    // the non-interactive remote shell a background job is not a group leader, so setsid does not
    // fork and $! is the session's pid.
    // A simple command in the background: a list or a { group } would run in a forked subshell
    // and $! would name that instead.
    const words: RemoteWord[] = [
      { raw: 'mkdir -p --' },
      { path: spec.runDir },
      { raw: '&& rm -f --' },
      { path: `${spec.runDir}/stdout.log` },
      { path: `${spec.runDir}/stderr.log` },
      { raw: '&& cd --' },
      { path: spec.cwd },
      { raw: '|| exit 1;' },
      { raw: 'setsid env' },
      ...env,
      ...argv,
      { raw: '</dev/null >' },
      { path: `${spec.runDir}/stdout.log` },
      { raw: '2>' },
      { path: `${spec.runDir}/stderr.log` },
      { raw: '& echo $!' },
    ];
    const out = await runSshChecked(this.target, words, this.settings(), `starting the trainer in ${spec.runDir}`, {
      timeoutMs: 60_000,
    });
    const pid = Number(out.toString().trim());
    if (!Number.isInteger(pid) || pid <= 0)
      throw new SshError(
        `starting the trainer on ${this.target} did not report a process id (got ${JSON.stringify(out.toString().trim())})`,
      );
    return { pid, pgid: pid };
  }

  async isAlive(pgid: number): Promise<boolean | undefined> {
    if (!Number.isInteger(pgid) || pgid <= 1) return false; // kill(0)/kill(-1) would answer for other processes
    const r = await runSsh(this.target, ['kill', '-s', '0', '--', `-${pgid}`], this.settings(), { timeoutMs: 30_000 });
    if (r.code === SSH_CONNECTION_FAILED) return undefined;
    return r.code === 0;
  }

  async processesAlive(pids: number[], host: string): Promise<boolean | undefined> {
    const ids = pids.filter((p) => Number.isInteger(p) && p > 0).map(String);
    if (ids.length === 0) return false;
    // Exit 3: the host's name is not run.json's (another node of a cluster sharing the folder).
    const r = await runSsh(
      this.target,
      [
        { raw: 'test "$(hostname)" =' },
        host,
        { raw: '|| exit 3; for p in' },
        ...ids,
        { raw: '; do kill -s 0 "$p" 2>/dev/null && exit 0; done; exit 1' },
      ],
      this.settings(),
      { timeoutMs: 30_000 },
    );
    if (r.code === 0) return true;
    if (r.code === 1) return false;
    return undefined;
  }

  async removeRunDir(runDir: string): Promise<void> {
    const r = await runSsh(
      this.target,
      [{ raw: 'test -f' }, { path: `${runDir}/run.json` }, { raw: '|| exit 3; rm -rf --' }, { path: runDir }],
      this.settings(),
      { timeoutMs: 120_000 },
    );
    if (r.code === 3)
      throw new SshError(`${this.target}:${runDir} is not a run folder (it has no run.json): not deleted`);
    if (r.code === SSH_CONNECTION_FAILED)
      throw new SshError(`cannot reach ${this.target} over ssh: ${r.stderr || 'connection failed'}`);
    if (r.code !== 0) throw new SshError(`deleting ${runDir} on ${this.target} failed: ${r.stderr}`);
  }

  async checkRunGroup(mark: RunGroupMark): Promise<RunGroupVerdict> {
    const r = await runSsh(
      this.target,
      ['sh', '-c', RUN_GROUP_CHECK, 'fsdp-run-group', ...runGroupCheckArgs(mark)],
      this.settings(),
      { timeoutMs: 60_000 },
    );
    if (r.code === SSH_CONNECTION_FAILED)
      throw new SshError(
        `cannot reach ${this.target} to check the run's processes: ${r.stderr || 'connection failed'}`,
      );
    return parseRunGroupVerdict(r.stdout.toString('utf8') || r.stderr);
  }

  async signal(pgid: number, signal: StopSignal): Promise<void> {
    if (!Number.isInteger(pgid) || pgid <= 1)
      throw new Error(`refusing to signal process group ${pgid} on ${this.target}: never a run's`);
    const r = await runSsh(this.target, ['kill', '-s', signal.slice(3), '--', `-${pgid}`], this.settings(), {
      timeoutMs: 30_000,
    });
    if (r.code === SSH_CONNECTION_FAILED)
      throw new SshError(`cannot reach ${this.target} to stop the run: ${r.stderr}`);
  }
}

/**
 * Remote shell words that end the command unless `file` is a regular file (after symbolic links):
 * exit 3 when it does not exist, 4 when it is a FIFO, a device or a folder. A FIFO would block
 * cat or head there until the ssh timeout, and /dev/zero would stream until the byte cap.
 */
export function onlyRegular(file: string): RemoteWord[] {
  return [
    { raw: 'if ! test -e' },
    { path: file },
    { raw: '; then exit 3; fi; if ! test -f' },
    { path: file },
    { raw: '; then exit 4; fi' },
  ];
}
