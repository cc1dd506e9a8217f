// Several "hosts" on this one machine for tests of runs across hosts: each is a network namespace
// with its own address on a private bridge and its own host name (a UTS namespace), running a real
// sshd on port 22 of that address. They share the filesystem, as cluster nodes share a home. The
// editor reaches them by aliases in a client config, as from ~/.ssh/config; the hosts reach each
// other by address with a config mpirun's ssh is told to use (OMPI_MCA_plm_rsh_args, set by sshd).
// Needs root (ip netns, veth, a bridge); `available()` says whether this machine allows it.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { descendants, keygen, remoteEnvironment, waitForPort } from './sshd';

export class NamespaceHosts {
  private constructor(
    readonly dir: string,
    /** The editor's names for the hosts (aliases in clientConfig). */
    readonly aliases: string[],
    /** The host names the hosts have (what each rank reports). */
    readonly hostNames: string[],
    /** Their addresses on the bridge. */
    readonly addresses: string[],
    /** Client config for `ssh -F`: the aliases, key and known hosts. */
    readonly clientConfig: string,
    private readonly bridge: string,
    private readonly namespaces: string[],
    private readonly daemons: ChildProcess[],
  ) {}

  /** Why namespaces cannot be made here, or undefined when they can. */
  static unavailable(): string | undefined {
    if (process.getuid?.() !== 0) return 'needs root (ip netns, veth, bridge)';
    const probe = `fsdp-probe-${process.pid}`;
    const add = spawnSync('ip', ['netns', 'add', probe], { encoding: 'utf8' });
    if (add.status !== 0) return `ip netns add failed: ${add.stderr || add.error?.message}`;
    spawnSync('ip', ['netns', 'del', probe]);
    return undefined;
  }

  static async start(count: number, prefix = 'fsdp-node'): Promise<NamespaceHosts> {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-hosts-'));
    const file = (name: string) => path.join(dir, name);
    // Names the kernel accepts (interfaces: at most 15 characters), unique per test process.
    const tag = String(process.pid % 100000);
    const subnet = `10.${200 + (process.pid % 50)}.${(process.pid >> 6) % 250}`;
    const bridge = `fsbr${tag}`;
    const letters = 'abcdefgh';
    const aliases = Array.from({ length: count }, (_, i) => `${prefix}-${letters[i]}`);
    const hostNames = Array.from({ length: count }, (_, i) => `node-${letters[i]}-${tag}`);
    const addresses = Array.from({ length: count }, (_, i) => `${subnet}.${i + 2}`);
    const namespaces = Array.from({ length: count }, (_, i) => `fsdp-${tag}-${letters[i]}`);
    const daemons: ChildProcess[] = [];
    const hosts = new NamespaceHosts(
      dir,
      aliases,
      hostNames,
      addresses,
      file('ssh_config'),
      bridge,
      namespaces,
      daemons,
    );
    try {
      ip('link', 'add', bridge, 'type', 'bridge');
      ip('addr', 'add', `${subnet}.1/24`, 'dev', bridge);
      ip('link', 'set', bridge, 'up');
      keygen(file('host_ed25519'));
      keygen(file('client_ed25519'));
      writeFileSync(file('authorized_keys'), readFileSync(file('client_ed25519.pub')));
      const hostPub = readFileSync(file('host_ed25519.pub'), 'utf8').trim().split(/\s+/).slice(0, 2).join(' ');
      writeFileSync(file('known_hosts'), addresses.map((a) => `${a} ${hostPub}\n`).join(''));
      const clientOptions = [
        `  User ${os.userInfo().username}`,
        `  IdentityFile ${file('client_ed25519')}`,
        '  IdentitiesOnly yes',
        `  UserKnownHostsFile ${file('known_hosts')}`,
        '  StrictHostKeyChecking yes',
        '  BatchMode yes',
        '  LogLevel ERROR',
      ];
      writeFileSync(
        file('ssh_config'),
        aliases
          .map((a, i) => [`Host ${a}`, `  HostName ${addresses[i]}`, '  Port 22', ...clientOptions].join('\n'))
          .join('\n') + '\n',
      );
      // How the hosts reach each other: by address (what the aliases resolve to), same key.
      writeFileSync(file('node_ssh_config'), ['Host *', ...clientOptions].join('\n') + '\n');
      mkdirSync('/run/sshd', { recursive: true });
      for (let i = 0; i < count; i++) {
        const ns = namespaces[i];
        const veth = `fsv${tag}${letters[i]}`;
        ip('netns', 'add', ns);
        ip('link', 'add', veth, 'type', 'veth', 'peer', 'name', `fsp${tag}${letters[i]}`);
        ip('link', 'set', `fsp${tag}${letters[i]}`, 'netns', ns);
        ip('link', 'set', veth, 'master', bridge, 'up');
        ip('netns', 'exec', ns, 'ip', 'addr', 'add', `${addresses[i]}/24`, 'dev', `fsp${tag}${letters[i]}`);
        ip('netns', 'exec', ns, 'ip', 'link', 'set', `fsp${tag}${letters[i]}`, 'up');
        ip('netns', 'exec', ns, 'ip', 'link', 'set', 'lo', 'up');
        const conf = file(`sshd_config_${letters[i]}`);
        writeFileSync(
          conf,
          [
            'Port 22',
            `ListenAddress ${addresses[i]}`,
            `HostKey ${file('host_ed25519')}`,
            `AuthorizedKeysFile ${file('authorized_keys')}`,
            `PidFile ${file(`sshd_${letters[i]}.pid`)}`,
            'PasswordAuthentication no',
            'KbdInteractiveAuthentication no',
            'PermitRootLogin prohibit-password',
            'StrictModes no',
            'UsePAM no',
            'MaxStartups 100',
            'MaxSessions 100',
            `SetEnv ${Object.entries(remoteEnvironment(dir, { OMPI_MCA_plm_rsh_args: `-F ${file('node_ssh_config')}` }))
              .map(([k, v]) => `"${k}=${v}"`)
              .join(' ')}`,
          ].join('\n') + '\n',
        );
        // The namespace's own host name, then sshd in the foreground: our child, as in sshd.ts.
        const daemon = spawn(
          'ip',
          [
            'netns',
            'exec',
            ns,
            'unshare',
            '--uts',
            '--',
            'sh',
            '-c',
            'hostname "$1" && exec /usr/sbin/sshd -D -e -f "$2"',
            'sh',
            hostNames[i],
            conf,
          ],
          { stdio: ['ignore', 'ignore', 'pipe'] },
        );
        let log = '';
        daemon.stderr!.on('data', (b: Buffer) => (log = (log + b.toString()).slice(-20_000)));
        daemons.push(daemon);
        await waitForPort(22, daemon, () => log, 15_000, addresses[i]);
      }
    } catch (e) {
      await hosts.stop();
      throw e;
    }
    return hosts;
  }

  async stop(): Promise<void> {
    for (const d of this.daemons) {
      const all = d.pid ? descendants(d.pid) : [];
      if (d.exitCode === null && d.signalCode === null) {
        const exited = new Promise((resolve) => d.once('exit', resolve));
        d.kill('SIGTERM');
        await exited;
      }
      for (const pid of all) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* gone already */
        }
      }
    }
    // Whatever still runs in a namespace (a rank, an orted) goes with it.
    for (const ns of this.namespaces) {
      const pids =
        spawnSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).stdout?.split('\n').filter(Boolean) ?? [];
      for (const pid of pids) {
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          /* gone already */
        }
      }
      spawnSync('ip', ['netns', 'del', ns]);
    }
    spawnSync('ip', ['link', 'del', this.bridge]);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function ip(...args: string[]): void {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ip ${args.join(' ')} failed: ${r.stderr || r.error?.message}`);
}
