// The system OpenSSH client, so the user's ~/.ssh/config, agent, ProxyJump and ControlMaster all
// apply. ssh is always given an argument vector; the remote command line it carries is made only
// by core/remote/remote-command.ts, and the host alias is checked before ssh sees it.
import { spawn, type ChildProcess } from 'node:child_process';
import { checkHostAlias, commandLine, type RemoteWord } from '../../core/remote/remote-command';

export interface SshSettings {
  /** `ssh -F FILE`: a config file other than ~/.ssh/config. */
  configFile?: string;
  /** Seconds to wait for a connection. */
  connectTimeoutS?: number;
  /** The ssh executable (default `ssh` from PATH). */
  executable?: string;
}

export interface SshResult {
  code: number;
  stdout: Buffer;
  stderr: string;
}

/** ssh exits with 255 when the connection itself failed, whatever the remote command did. */
export const SSH_CONNECTION_FAILED = 255;

export class SshError extends Error {}

/** The argv after `ssh`: options, `--`, the host, and the quoted remote command line. */
export function sshArgv(host: string, remote: RemoteWord[], settings: SshSettings, extra: string[] = []): string[] {
  const bad = checkHostAlias(host);
  if (bad) throw new SshError(bad);
  return [
    ...(settings.configFile ? ['-F', settings.configFile] : []),
    '-T', // no terminal: output is data
    '-o',
    'BatchMode=yes', // never prompt: there is no one to answer in the extension host
    '-o',
    `ConnectTimeout=${settings.connectTimeoutS ?? 15}`,
    // Notice a dead connection within ~15 s instead of waiting for TCP's timeout.
    '-o',
    'ServerAliveInterval=5',
    '-o',
    'ServerAliveCountMax=3',
    ...extra,
    '--',
    host,
    commandLine(remote),
  ];
}

export function spawnSsh(
  host: string,
  remote: RemoteWord[],
  settings: SshSettings,
  extra: string[] = [],
): ChildProcess {
  return spawn(settings.executable ?? 'ssh', sshArgv(host, remote, settings, extra), {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

export interface SshRunOptions {
  /** Written to the remote command's stdin (a stream is piped: large files are not held in memory). */
  input?: Buffer | string | NodeJS.ReadableStream;
  timeoutMs?: number;
}

/** Runs a remote command to completion. */
export function runSsh(
  host: string,
  remote: RemoteWord[],
  settings: SshSettings,
  opts: SshRunOptions = {},
): Promise<SshResult> {
  return new Promise((resolve, reject) => {
    let child: ChildProcess;
    try {
      child = spawn(settings.executable ?? 'ssh', sshArgv(host, remote, settings), {
        stdio: [opts.input !== undefined ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      });
    } catch (e) {
      reject(e);
      return;
    }
    const out: Buffer[] = [];
    let err = '';
    child.stdout!.on('data', (b: Buffer) => out.push(b));
    child.stderr!.on('data', (b: Buffer) => {
      if (err.length < 64_000) err += b.toString();
    });
    const timer = opts.timeoutMs ? setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs) : undefined;
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(new SshError(`cannot run ssh: ${e.message}`));
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? SSH_CONNECTION_FAILED : 0), stdout: Buffer.concat(out), stderr: err.trim() });
    });
    const input = opts.input;
    if (input === undefined) return;
    child.stdin!.on('error', () => undefined); // the remote side may close early; its exit code says why
    if (typeof input === 'string' || Buffer.isBuffer(input)) child.stdin!.end(input);
    else input.pipe(child.stdin!);
  });
}

/** Like runSsh, but a failed connection or a non-zero exit is an error naming the host and the reason. */
export async function runSshChecked(
  host: string,
  remote: RemoteWord[],
  settings: SshSettings,
  what: string,
  opts: SshRunOptions = {},
): Promise<Buffer> {
  const r = await runSsh(host, remote, settings, opts);
  if (r.code === SSH_CONNECTION_FAILED)
    throw new SshError(`cannot reach ${host} over ssh (${what}): ${r.stderr || 'connection failed'}`);
  if (r.code !== 0) throw new SshError(`${what} on ${host} failed (exit ${r.code}): ${r.stderr || 'no message'}`);
  return r.stdout;
}
