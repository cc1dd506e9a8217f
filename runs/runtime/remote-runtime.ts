// The runtime on an SSH host: on first use the native sources are copied there and built with the
// host's own CMake and compiler (so the binary fits its CPU, BLAS and CUDA), in a folder named by
// the sources' content hash — a second launch with the same sources finds it and starts at once.
// A GPU host's build targets its GPUs' architectures and finds cuBLASLt and NCCL in PyTorch's
// wheels when its CUDA toolkit lacks them (remote-build-facts.ts); the launch output says which
// backend was built. Data files are copied the same way, by content hash, only when the host lacks them.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, statSync } from 'node:fs';
import path from 'node:path';
import { BUILD_TOOLS, buildFailureMessage, missingToolsMessage, RUNTIME_SOURCES, sourceHash } from './runtime-build';
import {
  BUILD_FACTS_SCRIPT,
  cmakeDefinitions,
  describeBuiltBackend,
  missingLibrariesMessage,
  parseBuildFacts,
  type BuildFacts,
} from './remote-build-facts';
import type { RemoteWord } from '../../core/remote/remote-command';
import { runSsh, runSshChecked, SSH_CONNECTION_FAILED, SshError, type SshSettings } from '../machines/ssh';

export { RUNTIME_SOURCES, sourceHash };

/** Tools the build and the launch need on the host, with the Debian package that has each. */
const REQUIRED_TOOLS: Array<[tool: string, pkg: string]> = [
  ...BUILD_TOOLS,
  ['tar', 'tar'],
  ['setsid', 'util-linux'],
  ['tail', 'coreutils'],
];

export interface RemoteRuntime {
  /** Absolute path of fsdp-train-native on the host. */
  binary: string;
  /** Whether this call built it (false: found in the cache). */
  built: boolean;
  /** Which backend the build has: "CUDA backend for sm_90 (cuBLASLt …; NCCL …)" or "CPU backend only: …". */
  backend: string;
}

/** Where a build records what it built, beside the binary's build folder. */
const BACKEND_FILE = 'backend.txt';

export class RemoteRuntimeInstaller {
  constructor(
    private readonly host: string,
    private readonly settings: () => SshSettings,
    /** The extension's root folder, holding RUNTIME_SOURCES. */
    private readonly root: string,
  ) {}

  /** Makes sure the runtime for these sources is built under `base` (absolute) on the host. */
  async ensure(base: string, progress: (message: string) => void): Promise<RemoteRuntime> {
    const hash = sourceHash(this.root).slice(0, 16);
    const dir = `${base}/runtime/${hash}`;
    const binary = `${dir}/native/build/Release/fsdp-train-native`;
    const found = await runSsh(
      this.host,
      ['test', '-x', binary, { raw: '&& cat' }, `${dir}/${BACKEND_FILE}`, { raw: '2>/dev/null' }],
      this.settings(),
      { timeoutMs: 60_000 },
    );
    if (found.code === SSH_CONNECTION_FAILED)
      throw new SshError(`cannot reach ${this.host} over ssh: ${found.stderr || 'connection failed'}`);
    if (found.code === 0)
      return {
        binary,
        built: false,
        backend: found.stdout.toString().trim() || 'unknown (built before backends were recorded)',
      };

    progress(`checking the build tools on ${this.host}…`);
    await this.checkTools();
    const facts = await this.buildFacts();
    const missing = missingLibrariesMessage(this.host, facts);
    if (missing) throw new SshError(missing);
    const tmp = `${dir}.tmp-${process.pid}-${Date.now()}`;
    progress(`copying the runtime sources to ${this.host}…`);
    const archive = await tarOf(this.root);
    await runSshChecked(
      this.host,
      ['rm', '-rf', '--', tmp, { raw: '&&' }, 'mkdir', '-p', '--', tmp, { raw: '&&' }, 'tar', '-xf', '-', '-C', tmp],
      this.settings(),
      'unpacking the runtime sources',
      { input: archive, timeoutMs: 300_000 },
    );
    const gpus = facts.gpuArchitectures.length
      ? ` for its GPUs (${facts.gpuArchitectures.map((a) => `sm_${a}`).join(', ')})`
      : '';
    progress(`building the runtime on ${this.host} with its CMake and compiler${gpus} (a few minutes, once)…`);
    const log = `${tmp}/build.log`;
    const build = await runSsh(this.host, buildCommand(tmp, log, facts), this.settings(), { timeoutMs: 30 * 60_000 });
    if (build.code !== 0) {
      await runSsh(this.host, ['rm', '-rf', '--', tmp], this.settings(), { timeoutMs: 60_000 });
      if (build.code === SSH_CONNECTION_FAILED)
        throw new SshError(
          `the connection to ${this.host} dropped while the runtime was being built there (${build.stderr || 'no message'}); launch again to build it anew`,
        );
      throw new SshError(buildFailureMessage(`on ${this.host}`, build.stderr));
    }
    const configured = await runSshChecked(
      this.host,
      ['grep', '-E', '^-- CUDA backend', log, { raw: '|| true' }],
      this.settings(),
      'reading the build log',
      { timeoutMs: 60_000 },
    );
    const backend = describeBuiltBackend(configured.toString(), facts);
    await runSshChecked(
      this.host,
      ['cat', { raw: '>' }, `${tmp}/${BACKEND_FILE}`],
      this.settings(),
      'recording the build',
      { input: Buffer.from(`${backend}\n`), timeoutMs: 60_000 },
    );
    // Publish by rename: a folder under runtime/<hash> is always a complete build. Another window
    // may have won the race; then its build is as good as ours.
    await runSshChecked(
      this.host,
      ['mv', '-T', '--', tmp, dir, { raw: '2>/dev/null ||' }, 'rm', '-rf', '--', tmp],
      this.settings(),
      'publishing the runtime build',
      { timeoutMs: 60_000 },
    );
    progress(`built the runtime on ${this.host}: ${backend}`);
    return { binary, built: true, backend };
  }

  /** What the host offers the build (GPU architectures, CUDA toolkit and wheels, libraries, distribution). */
  async buildFacts(): Promise<BuildFacts> {
    const out = await runSshChecked(
      this.host,
      ['sh', '-c', BUILD_FACTS_SCRIPT],
      this.settings(),
      'reading what the host offers the build',
      { timeoutMs: 60_000 },
    );
    return parseBuildFacts(out.toString());
  }

  /** Copies a local file to `base/data/` unless the host has it (by content hash); returns its remote path. */
  async ensureFile(base: string, localPath: string, progress: (message: string) => void): Promise<string> {
    const hash = await fileHash(localPath);
    const remote = `${base}/data/${hash.slice(0, 16)}-${path.basename(localPath)}`;
    const found = await runSsh(this.host, ['test', '-f', remote], this.settings(), { timeoutMs: 60_000 });
    if (found.code === 0) return remote;
    if (found.code === SSH_CONNECTION_FAILED) throw new SshError(`cannot reach ${this.host} over ssh: ${found.stderr}`);
    progress(
      `copying ${path.basename(localPath)} (${(statSync(localPath).size / 2 ** 20).toFixed(1)} MiB) to ${this.host}…`,
    );
    const tmp = `${remote}.tmp-${process.pid}`;
    await runSshChecked(
      this.host,
      [
        'mkdir',
        '-p',
        '--',
        `${base}/data`,
        { raw: '&&' },
        'cat',
        { raw: '>' },
        tmp,
        { raw: '&&' },
        'mv',
        '-f',
        '--',
        tmp,
        remote,
      ],
      this.settings(),
      `copying ${localPath}`,
      { input: createReadStream(localPath), timeoutMs: 60 * 60_000 },
    );
    return remote;
  }

  private async checkTools(): Promise<void> {
    const script = REQUIRED_TOOLS.map(([tool]) => `command -v ${tool} >/dev/null 2>&1 || echo ${tool}`).join('; ');
    const out = await runSshChecked(this.host, [{ raw: script }], this.settings(), 'checking build tools', {
      timeoutMs: 60_000,
    });
    const missing = out
      .toString()
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
    if (missing.length) throw new SshError(missingToolsMessage(this.host, missing, REQUIRED_TOOLS));
  }
}

/**
 * The remote words of the build: CMake configure (with the host's GPU architectures and the
 * wheels' folder) and build of the CLI into `dir`/native/build, output to `log`; on failure the
 * log's tail goes to stderr.
 */
export function buildCommand(dir: string, log: string, facts: BuildFacts): RemoteWord[] {
  return [
    'cmake',
    '-S',
    `${dir}/native`,
    '-B',
    `${dir}/native/build`,
    '-DCMAKE_BUILD_TYPE=Release',
    ...cmakeDefinitions(facts),
    { raw: '>' },
    log,
    { raw: '2>&1 &&' },
    'cmake',
    '--build',
    `${dir}/native/build`,
    '--target',
    'fsdp-train-native',
    { raw: '--parallel "$(nproc 2>/dev/null || echo 2)" >>' },
    log,
    { raw: '2>&1 ||' },
    { raw: '{ tail -n 25' },
    log,
    { raw: '>&2; exit 1; }' },
  ];
}

function fileHash(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const h = createHash('sha256');
    createReadStream(file)
      .on('data', (b) => h.update(b))
      .on('error', reject)
      .on('end', () => resolve(h.digest('hex')));
  });
}

/** A tar archive of the runtime's sources, made by the system tar (argv only; build/ excluded). */
function tarOf(root: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const tar = spawn(
      'tar',
      ['-C', root, '--exclude=./native/build', '-cf', '-', ...RUNTIME_SOURCES.map((f) => `./${f}`)],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const out: Buffer[] = [];
    let err = '';
    tar.stdout.on('data', (b: Buffer) => out.push(b));
    tar.stderr.on('data', (b: Buffer) => (err += b.toString()));
    tar.once('error', (e) => reject(new Error(`cannot run tar: ${e.message}`)));
    tar.once('close', (code) =>
      code === 0
        ? resolve(Buffer.concat(out))
        : reject(new Error(`tar of the runtime sources in ${root} failed: ${err}`)),
    );
  });
}
