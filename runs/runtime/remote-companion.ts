// The Python companion on an SSH host: python/fsdp_studio copied there on first use, in a folder
// named by its content hash (a second launch with the same companion finds it), published by rename
// so a folder under companion/<hash> is always complete. Its supervisor runs a person's command and
// puts the package on the command's PYTHONPATH.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { runSsh, runSshChecked, SSH_CONNECTION_FAILED, SshError, type SshSettings } from '../machines/ssh';

/** The package's folder under the extension root. */
export const COMPANION_DIR = 'python';
export const COMPANION_PACKAGE = 'fsdp_studio';

/** Where the supervisor is, under a folder holding the package. */
export function supervisorPath(companionRoot: string): string {
  return `${companionRoot.replace(/\/+$/, '')}/${COMPANION_PACKAGE}/supervise.py`;
}

export class RemoteCompanionInstaller {
  constructor(
    private readonly host: string,
    private readonly settings: () => SshSettings,
    private readonly extensionRoot: string,
  ) {}

  /** Makes sure this companion is under `base` (absolute) on the host; returns the folder holding the package. */
  async ensure(base: string, progress: (message: string) => void): Promise<string> {
    const local = path.join(this.extensionRoot, COMPANION_DIR);
    const dir = `${base}/companion/${companionHash(local).slice(0, 16)}`;
    const found = await runSsh(this.host, ['test', '-f', supervisorPath(dir)], this.settings(), { timeoutMs: 60_000 });
    if (found.code === SSH_CONNECTION_FAILED)
      throw new SshError(`cannot reach ${this.host} over ssh: ${found.stderr || 'connection failed'}`);
    if (found.code === 0) return dir;
    progress(`copying FSDP Studio's Python companion to ${this.host}…`);
    const tmp = `${dir}.tmp-${process.pid}-${Date.now()}`;
    await runSshChecked(
      this.host,
      [
        'rm',
        '-rf',
        '--',
        tmp,
        { raw: '&&' },
        'mkdir',
        '-p',
        '--',
        tmp,
        { raw: '&&' },
        'tar',
        '-xf',
        '-',
        '-C',
        tmp,
        { raw: '&&' },
        'mv',
        '-T',
        '--',
        tmp,
        dir,
        { raw: '2>/dev/null ||' },
        'rm',
        '-rf',
        '--',
        tmp,
      ],
      this.settings(),
      'copying the Python companion',
      { input: await tarOf(local), timeoutMs: 120_000 },
    );
    return dir;
  }
}

/** Content hash of the package's Python files. */
export function companionHash(local: string): string {
  const h = createHash('sha256');
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const p = path.join(dir, name);
      if (statSync(p).isDirectory()) {
        if (name !== '__pycache__') walk(p);
      } else if (name.endsWith('.py')) h.update(path.relative(local, p)).update('\0').update(readFileSync(p));
    }
  };
  walk(path.join(local, COMPANION_PACKAGE));
  return h.digest('hex');
}

function tarOf(local: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const tar = spawn('tar', ['-C', local, '--exclude=__pycache__', '-cf', '-', COMPANION_PACKAGE], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    let err = '';
    tar.stdout.on('data', (b: Buffer) => out.push(b));
    tar.stderr.on('data', (b: Buffer) => (err += b.toString()));
    tar.once('error', (e) => reject(new Error(`cannot run tar: ${e.message}`)));
    tar.once('close', (code) =>
      code === 0 ? resolve(Buffer.concat(out)) : reject(new Error(`tar of ${local} failed: ${err}`)),
    );
  });
}
