// A real OpenSSH server on 127.0.0.1 for tests of remote runs: its own host key, client key,
// sshd_config and free port, and a client config file that gives it a host alias the way a
// user's ~/.ssh/config would. Nothing of the machine's own ssh set-up is read or changed.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../scripts/code-server';
import { compilerCacheEnvironment } from './compiler-cache';

const SSHD = '/usr/sbin/sshd';

/**
 * The "remote" folder (fsdp.remote.directory) the SSH tests share: the runtime built there by the
 * first-use test is found by the launch tests through its content hash, so one `npm test` builds
 * it once. Kept between runs only as a cache; the first-use test always rebuilds. Its name has
 * spaces, as real home folders sometimes do.
 */
export const SHARED_REMOTE_BASE = path.join(os.tmpdir(), `fsdp-studio test remote ${process.getuid?.() ?? 0}`);

export interface LoopbackSshdOptions {
  /** Host alias written into the client config (default fsdp-loopback). */
  alias?: string;
  /** Environment of remote sessions (sshd's SetEnv), e.g. a PATH without some tool. */
  setEnv?: Record<string, string>;
}

export class LoopbackSshd {
  private constructor(
    readonly dir: string,
    readonly port: number,
    readonly alias: string,
    /** Client config for `ssh -F`: the alias, key, port and known_hosts of this server. */
    readonly clientConfig: string,
    private readonly daemon: ChildProcess,
  ) {}

  static async start(opts: LoopbackSshdOptions = {}): Promise<LoopbackSshd> {
    const alias = opts.alias ?? 'fsdp-loopback';
    const dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-sshd-'));
    const file = (name: string) => path.join(dir, name);
    keygen(file('host_ed25519'));
    keygen(file('client_ed25519'));
    writeFileSync(file('authorized_keys'), readFileSync(file('client_ed25519.pub')));
    const hostPub = readFileSync(file('host_ed25519.pub'), 'utf8').trim().split(/\s+/).slice(0, 2).join(' ');
    const port = await freePort();
    writeFileSync(file('known_hosts'), `[127.0.0.1]:${port} ${hostPub}\n`);
    writeFileSync(
      file('sshd_config'),
      [
        `Port ${port}`,
        'ListenAddress 127.0.0.1',
        `HostKey ${file('host_ed25519')}`,
        `AuthorizedKeysFile ${file('authorized_keys')}`,
        `PidFile ${file('sshd.pid')}`,
        'PasswordAuthentication no',
        'KbdInteractiveAuthentication no',
        'PubkeyAuthentication yes',
        'PermitRootLogin prohibit-password',
        'StrictModes no',
        'UsePAM no',
        // Tests reconnect often and in parallel: don't throttle them.
        'MaxStartups 100',
        'MaxSessions 100',
        'LogLevel VERBOSE',
        // One SetEnv line: sshd keeps only the first of repeated directives.
        `SetEnv ${Object.entries(remoteEnvironment(dir, opts.setEnv))
          .map(([k, v]) => `"${k}=${v}"`)
          .join(' ')}`,
      ].join('\n') + '\n',
    );
    writeFileSync(
      file('ssh_config'),
      [
        `Host ${alias}`,
        '  HostName 127.0.0.1',
        `  Port ${port}`,
        `  User ${os.userInfo().username}`,
        `  IdentityFile ${file('client_ed25519')}`,
        '  IdentitiesOnly yes',
        `  UserKnownHostsFile ${file('known_hosts')}`,
        '  StrictHostKeyChecking yes',
        '  BatchMode yes',
        '  LogLevel ERROR',
      ].join('\n') + '\n',
    );
    mkdirSync('/run/sshd', { recursive: true }); // sshd's privilege separation directory
    // -D: stay in the foreground as our child, so the harness owns it; -e: log to stderr.
    const daemon = spawn(SSHD, ['-D', '-e', '-f', file('sshd_config')], { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    daemon.stderr?.on('data', (b: Buffer) => {
      log += b.toString();
      if (log.length > 100_000) log = log.slice(-50_000);
    });
    const server = new LoopbackSshd(dir, port, alias, file('ssh_config'), daemon);
    try {
      await waitForPort(port, daemon, () => log, 10_000);
    } catch (e) {
      await server.stop();
      throw e;
    }
    return server;
  }

  /** ssh arguments that reach this server by its alias: `ssh ...sshArgs() alias command`. */
  sshArgs(): string[] {
    return ['-F', this.clientConfig];
  }

  /** Runs a command on the "remote" host through the real client; returns its stdout. */
  exec(command: string): string {
    const r = spawnSync('ssh', [...this.sshArgs(), this.alias, command], { encoding: 'utf8', timeout: 30_000 });
    if (r.status !== 0) throw new Error(`ssh ${this.alias} ${command} failed (${r.status}): ${r.stderr}`);
    return r.stdout;
  }

  /**
   * Cuts every open connection the way a network drop or a sleeping laptop does: the server's
   * per-connection processes are killed, the listener stays. Returns how many were cut.
   */
  killConnections(): number {
    const pids = descendants(this.daemon.pid!).filter((pid) => commandOf(pid).startsWith('sshd'));
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone already */
      }
    }
    return pids.length;
  }

  async stop(): Promise<void> {
    const all = this.daemon.pid ? descendants(this.daemon.pid) : [];
    if (this.daemon.exitCode === null && this.daemon.signalCode === null) {
      const exited = new Promise((resolve) => this.daemon.once('exit', resolve));
      this.daemon.kill('SIGTERM');
      await exited;
    }
    for (const pid of all) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone already */
      }
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * The environment of remote sessions: a home folder of their own, as a remote host has, so the
 * shell sshd starts reads no start-up file of this machine's user. (Bash run by sshd reads
 * ~/.bashrc; a machine's own, with `pyenv init`, waits up to a minute on a lock that any killed
 * session leaves behind, and then every later remote command of the suite seems to hang.)
 * And the set-up's compiler cache: the runtime a test builds on the host (under the temporary
 * folder) takes the objects this checkout's build compiled (compiler-cache.ts).
 */
export function remoteEnvironment(dir: string, extra: Record<string, string> = {}): Record<string, string> {
  const home = path.join(dir, 'home');
  mkdirSync(home, { recursive: true });
  return { HOME: home, ...compilerCacheEnvironment(), ...extra };
}

export function keygen(file: string): void {
  const r = spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'fsdp-studio-test', '-f', file], {
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`ssh-keygen failed: ${r.stderr}`);
}

/** Process ids whose ancestry leads to `root`, from /proc (children first found, then theirs). */
export function descendants(root: number): number[] {
  const parentOf = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // The command name is in parentheses and may contain spaces: fields follow the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parentOf.set(Number(name), ppid);
    } catch {
      /* exited while listing */
    }
  }
  const out: number[] = [];
  const frontier = [root];
  while (frontier.length) {
    const p = frontier.pop()!;
    for (const [pid, ppid] of parentOf) {
      if (ppid === p) {
        out.push(pid);
        frontier.push(pid);
      }
    }
  }
  return out;
}

function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
  } catch {
    return '';
  }
}

export async function waitForPort(
  port: number,
  daemon: ChildProcess,
  log: () => string,
  timeoutMs: number,
  host = '127.0.0.1',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (daemon.exitCode !== null) throw new Error(`sshd exited with code ${daemon.exitCode}:\n${log()}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, host, () => {
        s.end();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`sshd did not listen on ${host}:${port} within ${timeoutMs} ms:\n${log()}`);
}
