// Where SLURM commands run: a login host, which is this machine or an SSH host alias. Commands are
// argument vectors on both: spawned directly here, and over ssh as words quoted by core/remote
// (runSsh), so a path or job name from a config is never read as shell syntax on either.
import { spawn } from 'node:child_process';
import { LOCAL, type TargetName } from './run-machine';
import { runSsh, SSH_CONNECTION_FAILED, SshError, type SshSettings } from './ssh';

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CommandOptions {
  input?: string;
  env?: Record<string, string>;
  timeoutMs?: number;
}

export interface LoginHost {
  readonly target: TargetName;
  /** Runs a command to completion; throws only when the host cannot be reached or the command started. */
  run(argv: string[], opts?: CommandOptions): Promise<CommandResult>;
}

/** Exit status of a shell (over ssh) that did not find the command. */
export const COMMAND_NOT_FOUND = 127;

const DEFAULT_TIMEOUT_MS = 60_000;

export function localLoginHost(): LoginHost {
  return {
    target: LOCAL,
    run: (argv, opts = {}) =>
      new Promise((resolve, reject) => {
        const child = spawn(argv[0], argv.slice(1), {
          stdio: [opts.input !== undefined ? 'pipe' : 'ignore', 'pipe', 'pipe'],
          env: { ...process.env, ...opts.env },
        });
        let stdout = '';
        let stderr = '';
        child.stdout!.on('data', (b: Buffer) => (stdout += b.toString()));
        child.stderr!.on('data', (b: Buffer) => {
          if (stderr.length < 64_000) stderr += b.toString();
        });
        const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? DEFAULT_TIMEOUT_MS);
        child.once('error', (e: NodeJS.ErrnoException) => {
          clearTimeout(timer);
          if (e.code === 'ENOENT')
            resolve({ code: COMMAND_NOT_FOUND, stdout: '', stderr: `${argv[0]}: command not found` });
          else reject(new Error(`cannot run ${argv[0]}: ${e.message}`));
        });
        child.once('close', (code, signal) => {
          clearTimeout(timer);
          resolve({
            code: code ?? 128,
            stdout,
            stderr: (signal ? `${argv[0]} ended by ${signal}\n` : '') + stderr.trim(),
          });
        });
        if (opts.input !== undefined) {
          child.stdin!.on('error', () => undefined);
          child.stdin!.end(opts.input);
        }
      }),
  };
}

export function sshLoginHost(target: TargetName, settings: () => SshSettings): LoginHost {
  return {
    target,
    run: async (argv, opts = {}) => {
      const env = Object.entries(opts.env ?? {}).map(([k, v]) => `${k}=${v}`);
      const r = await runSsh(target, env.length ? ['env', ...env, ...argv] : argv, settings(), {
        ...(opts.input !== undefined ? { input: opts.input } : {}),
        timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      });
      if (r.code === SSH_CONNECTION_FAILED)
        throw new SshError(`cannot reach ${target} over ssh: ${r.stderr || 'connection failed'}`);
      return { code: r.code, stdout: r.stdout.toString('utf8'), stderr: r.stderr };
    },
  };
}

/** Writes a file on the host atomically (a temporary name, then a rename), creating its folder. */
export async function writeHostFile(host: LoginHost, file: string, content: string): Promise<void> {
  const r = await host.run(
    ['sh', '-c', 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1.tmp" && mv -f -- "$1.tmp" "$1"', 'fsdp-write', file],
    { input: content },
  );
  if (r.code !== 0)
    throw new Error(
      `writing ${file}${host.target === LOCAL ? '' : ` on ${host.target}`} failed: ${r.stderr || `exit ${r.code}`}`,
    );
}
