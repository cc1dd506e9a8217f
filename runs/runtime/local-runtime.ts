// The native runtime on this machine. A source checkout has it in native/build/Release (built by
// `npm install`); an installed extension (a .vsix) ships its sources instead and builds them on
// first use with this machine's CMake and compiler — as it does on SSH hosts (remote-runtime.ts;
// both share runtime-build.ts) — into a cache folder named by the sources' content hash, so every
// window and every later version with the same sources finds it at once. No vscode here.
import { execFile, spawn } from 'node:child_process';
import {
  accessSync,
  constants,
  createWriteStream,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  BUILD_FACTS_SCRIPT,
  cmakeDefinitions,
  missingLibrariesMessage,
  parseBuildFacts,
  type BuildFacts,
} from './remote-build-facts';
import { BuildProgress } from './build-progress';
import { BUILD_TOOLS, buildFailureMessage, cmakeSteps, missingToolsMessage, sourceHash } from './runtime-build';

export const TRAINER_BINARY = 'fsdp-train-native';
export const ADDON_FILE = 'fsdp_native.node';
/** CMake targets an installed extension needs: the trainer and the editor's addon. */
const TARGETS = [TRAINER_BINARY, 'fsdp_addon'];

/** $FSDP_RUNTIME_CACHE, else $XDG_CACHE_HOME/fsdp-studio/runtime, else ~/.cache/fsdp-studio/runtime. */
export function runtimeCacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  if (env.FSDP_RUNTIME_CACHE) return env.FSDP_RUNTIME_CACHE;
  const base = env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'fsdp-studio', 'runtime');
}

export class LocalRuntime {
  /** Folder holding fsdp-train-native and fsdp_native.node (they may not be built yet). */
  readonly dir: string;
  /** Whether this is a source checkout's own build (never built here). */
  readonly fromCheckout: boolean;
  private building: Promise<void> | undefined;

  constructor(
    private readonly extensionRoot: string,
    cacheRoot = runtimeCacheRoot(),
  ) {
    const checkout = path.join(extensionRoot, 'native', 'build', 'Release');
    this.fromCheckout = existsSync(path.join(checkout, TRAINER_BINARY));
    this.dir = this.fromCheckout ? checkout : path.join(cacheRoot, sourceHash(extensionRoot).slice(0, 16), 'Release');
  }

  get binary(): string {
    return path.join(this.dir, TRAINER_BINARY);
  }

  get addon(): string {
    return path.join(this.dir, ADDON_FILE);
  }

  isBuilt(): boolean {
    return existsSync(this.binary) && existsSync(this.addon);
  }

  /**
   * The last build's full output (CMake and the compiler), kept beside the build after it ends,
   * failed or not, so a person can read it; a new build starts it afresh.
   */
  get buildLog(): string {
    return `${path.dirname(this.dir)}.build.log`;
  }

  /**
   * Builds the runtime unless it is built; one build at a time however many callers ask.
   * `progress` gets each step's message and, while compiling, the percentage done (never going
   * back). Aborting `cancel` stops the compiler and leaves nothing built (BuildCancelled).
   */
  ensure(progress: (message: string, percent?: number) => void, cancel?: AbortSignal): Promise<void> {
    if (this.isBuilt()) return Promise.resolve();
    if (this.fromCheckout)
      return Promise.reject(
        new Error(
          `${this.dir} is incomplete: rebuild it with npm install (node scripts/setup/native.mjs) in ${this.extensionRoot}`,
        ),
      );
    this.building ??= this.build(progress, cancel).finally(() => (this.building = undefined));
    return this.building;
  }

  private async build(progress: (message: string, percent?: number) => void, cancel?: AbortSignal): Promise<void> {
    progress('checking the build tools…');
    const missing = BUILD_TOOLS.map(([tool]) => tool).filter((tool) => !onPath(tool));
    if (missing.length) throw new Error(missingToolsMessage('This machine', missing));
    // The same probe as on SSH hosts: the libraries (named with this distribution's package), and
    // a GPU machine's architectures and PyTorch's cuBLASLt/NCCL for its CUDA backend.
    const facts = await buildFacts();
    const lacking = missingLibrariesMessage('This machine', facts);
    if (lacking) throw new Error(lacking);
    const final = path.dirname(this.dir);
    const tmp = `${final}.tmp-${process.pid}-${Date.now()}`;
    mkdirSync(tmp, { recursive: true });
    // This build's own log, kept as buildLog when it ends (two windows may build at once).
    const log = path.join(tmp, 'build.log');
    const keepLog = () => {
      try {
        renameSync(log, this.buildLog);
      } catch {
        // nothing was logged
      }
    };
    const jobs = Math.max(1, os.availableParallelism?.() ?? os.cpus().length);
    const [configure, compile] = cmakeSteps(
      path.join(this.extensionRoot, 'native'),
      path.join(tmp, 'build'),
      TARGETS,
      jobs,
      [
        `-DFSDP_NODE_API_HEADERS=${path.join(this.extensionRoot, 'dist', 'native-headers')}`,
        // The tests are not shipped: a machine with GoogleTest must not look for them.
        '-DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON',
        ...cmakeDefinitions(facts),
        // Ninja counts every object ("[12/110]"); Make's percentages are per target.
        ...(onPath('ninja') ? ['-G', 'Ninja'] : []),
      ],
    );
    try {
      progress('configuring the build (CMake)…');
      await run(configure, log, () => undefined, cancel);
      progress(`compiling (${jobs} job${jobs > 1 ? 's' : ''}; a few minutes, once)…`, 0);
      const steps = new BuildProgress(Date.now());
      await run(
        compile,
        log,
        (line) => {
          const step = steps.line(line, Date.now());
          if (step) progress(step.message, step.percent);
        },
        cancel,
      );
    } catch (e) {
      const said = existsSync(log) ? readFileSync(log, 'utf8') : '';
      keepLog();
      rmSync(tmp, { recursive: true, force: true });
      if (e instanceof BuildCancelled) throw e;
      throw new Error(buildFailureMessage('on this machine', said), { cause: e });
    }
    keepLog();
    // Publish by rename: a folder named by the hash is always a complete build. Another window
    // may have won the race; its build is as good as ours. A broken one left behind is replaced.
    if (existsSync(final) && !this.isBuilt()) rmSync(final, { recursive: true, force: true });
    try {
      renameSync(path.join(tmp, 'build'), final);
    } catch (e) {
      if (!existsSync(this.binary)) throw e;
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
    if (!this.isBuilt()) throw new Error(`the build finished but ${this.binary} or ${this.addon} is missing`);
  }
}

/** remote-build-facts.ts's probe, run by this machine's sh. */
function buildFacts(): Promise<BuildFacts> {
  return new Promise((resolve) => {
    execFile('sh', ['-c', BUILD_FACTS_SCRIPT], { timeout: 60_000 }, (_e, stdout) =>
      resolve(parseBuildFacts(stdout ?? '')),
    );
  });
}

/** A build stopped on request: nothing was built, and the next launch that needs it starts again. */
export class BuildCancelled extends Error {
  constructor() {
    super('the native runtime build was cancelled: nothing was built');
  }
}

/**
 * Runs argv, its output appended to `log` and each line given to `onLine`; rejects on failure, or
 * with BuildCancelled once `cancel` aborts (the whole process group: make and ninja start compilers).
 */
function run(argv: string[], log: string, onLine: (line: string) => void, cancel?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (cancel?.aborted) return reject(new BuildCancelled());
    const out = createWriteStream(log, { flags: 'a' });
    const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const signal = (name: NodeJS.Signals) => {
      try {
        if (child.pid) process.kill(-child.pid, name);
      } catch {
        // already gone
      }
    };
    // SIGINT as Ctrl+C would: Ninja runs each compiler in a process group of its own and stops
    // them itself when interrupted (SIGKILL would orphan them); Make's share its group. Whatever
    // still runs after a few seconds is killed.
    const stop = () => {
      signal('SIGINT');
      setTimeout(() => signal('SIGKILL'), 5000).unref();
    };
    cancel?.addEventListener('abort', stop, { once: true });
    let pending = '';
    const take = (b: Buffer) => {
      out.write(b);
      pending += b.toString();
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const l of lines) onLine(l);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.once('error', (e) => {
      cancel?.removeEventListener('abort', stop);
      out.end();
      reject(e);
    });
    child.once('close', (code) => {
      cancel?.removeEventListener('abort', stop);
      out.end(() =>
        cancel?.aborted
          ? reject(new BuildCancelled())
          : code === 0
            ? resolve()
            : reject(new Error(`${argv[0]} exited with ${code}`)),
      );
    });
  });
}

function onPath(tool: string): boolean {
  return (process.env.PATH ?? '').split(path.delimiter).some((dir) => {
    try {
      accessSync(path.join(dir, tool), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}
