// Starts code-server (installed by scripts/setup/code-server.mjs) on a free loopback port with
// this extension loaded, and stops it with every child it spawned. Used by `npm start` and by the
// end-to-end test harness.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync, writeFileSync, existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

export const repoRoot = path.resolve(__dirname, '..');
const entry = path.join(repoRoot, '.tools', 'code-server', 'node_modules', 'code-server', 'out', 'node', 'entry.js');

export interface CodeServerOptions {
  /** Folder to open. */
  workspace: string;
  /** Where user settings, state and the extensions folder live; created if missing. */
  dataDir: string;
  port?: number;
  /** Let VS Code's Workspace Trust apply (default). Tests of untrusted behaviour keep it on. */
  workspaceTrust?: boolean;
  /** User settings.json content. */
  settings?: Record<string, unknown>;
  /** Extra environment for the extension host (e.g. HOME for ssh config in tests). */
  env?: NodeJS.ProcessEnv;
  /** Install this .vsix (as users do) instead of loading the repository as the extension. */
  vsix?: string;
  log?: (line: string) => void;
}

export interface RunningCodeServer {
  url: string;
  port: number;
  process: ChildProcess;
  /** Output so far, for failure messages. */
  output(): string;
  stop(): Promise<void>;
}

export async function startCodeServer(opts: CodeServerOptions): Promise<RunningCodeServer> {
  if (!existsSync(entry))
    throw new Error(`code-server is not installed (${entry}); run npm test or npm start once to set it up`);
  const port = opts.port ?? (await freePort());
  const extensionsDir = path.join(opts.dataDir, 'extensions');
  const userDataDir = path.join(opts.dataDir, 'user-data');
  mkdirSync(extensionsDir, { recursive: true });
  mkdirSync(path.join(userDataDir, 'User'), { recursive: true });
  if (opts.vsix) installVsix(opts.vsix, extensionsDir, userDataDir);
  else linkExtension(extensionsDir);
  writeFileSync(
    path.join(userDataDir, 'User', 'settings.json'),
    JSON.stringify(
      {
        'workbench.startupEditor': 'none',
        'telemetry.telemetryLevel': 'off',
        'extensions.autoCheckUpdates': false,
        'workbench.enableExperiments': false,
        ...opts.settings,
      },
      null,
      2,
    ),
  );
  const args = [
    entry,
    '--auth',
    'none',
    '--bind-addr',
    `127.0.0.1:${port}`,
    '--disable-telemetry',
    '--disable-update-check',
    '--disable-getting-started-override',
    '--extensions-dir',
    extensionsDir,
    '--user-data-dir',
    userDataDir,
    ...(opts.workspaceTrust === false ? ['--disable-workspace-trust'] : []),
    opts.workspace,
  ];
  // Detached: its own process group, so stop() can end the file watcher and extension host too.
  const child = spawn(process.execPath, args, {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...opts.env },
  });
  let output = '';
  const onData = (b: Buffer) => {
    output += b.toString();
    if (output.length > 200_000) output = output.slice(-100_000);
    opts.log?.(b.toString().trimEnd());
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const url = `http://127.0.0.1:${port}/`;
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      /* already gone */
    }
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }, 5000);
    await exited;
    clearTimeout(timer);
    try {
      process.kill(-child.pid!, 'SIGKILL'); // the fileWatcher child outlives its parent otherwise
    } catch {
      /* group already empty */
    }
  };
  try {
    await waitForHttp(url, child, () => output, 60_000);
  } catch (e) {
    await stop();
    throw e;
  }
  return { url, port, process: child, output: () => output, stop };
}

/** `code-server --install-extension FILE.vsix`: the extension unpacked into the extensions folder, as users get it. */
function installVsix(vsix: string, extensionsDir: string, userDataDir: string): void {
  const r = spawnSync(
    process.execPath,
    [entry, '--extensions-dir', extensionsDir, '--user-data-dir', userDataDir, '--install-extension', vsix],
    { encoding: 'utf8', timeout: 120_000 },
  );
  if (r.status !== 0)
    throw new Error(`code-server --install-extension ${vsix} failed (exit ${r.status}): ${r.stderr || r.stdout}`);
}

/** Makes the repository itself an installed extension: `<publisher>.<name>-<version>` → repo root. */
function linkExtension(extensionsDir: string): void {
  const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
    publisher: string;
    name: string;
    version: string;
  };
  const link = path.join(extensionsDir, `${pkg.publisher}.${pkg.name}-${pkg.version}`);
  rmSync(link, { force: true, recursive: false });
  symlinkSync(repoRoot, link, 'dir');
  // Without an extensions.json index code-server rescans; keeping none is the simplest valid state.
  rmSync(path.join(extensionsDir, 'extensions.json'), { force: true });
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

async function waitForHttp(url: string, child: ChildProcess, output: () => string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`code-server exited with code ${child.exitCode}:\n${output()}`);
    try {
      const res = await fetch(`${url}healthz`);
      if (res.ok) return;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`code-server did not answer at ${url} within ${timeoutMs / 1000} s:\n${output()}`);
}
