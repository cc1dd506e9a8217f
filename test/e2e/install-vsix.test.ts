// Installed as users install it (issue 18): `npm run package` makes the .vsix, a clean code-server
// installs it with --install-extension (no source checkout, no node_modules, no native build),
// and a run launched from it builds the native runtime on this machine on first use — with a
// progress notification — then trains to completion from the installed extension.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import type { RunManifest } from '../../core/protocol/run-manifest';
import { LocalMachine } from '../../runs/machines/local-machine';
import { repoRoot } from '../../scripts/code-server';
import { untilValue as until } from '../harness/until';
import { VsCodeSession } from './harness/vscode-session';

const SAMPLE_DATA = path.join(repoRoot, 'samples', 'data');

/** Every file under `dir`, relative to it. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)));
}

describe('e2e: the .vsix, installed into a clean code-server, launches a run', function () {
  // The first launch compiles the runtime: about a minute on 2 quiet cores.
  this.timeout(20 * 60_000);
  let tmp: string;
  let vscode: VsCodeSession | undefined;
  const local = new LocalMachine();

  before(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'fsdp-e2e-vsix-'));
  });
  afterEach(async function () {
    await vscode?.reportFailure(this.currentTest);
  });
  after(async () => {
    await vscode?.close();
    const runs = path.join(tmp, 'workspace', 'runs');
    for (const dir of existsSync(runs) ? await local.listRunDirs(runs) : []) {
      const pgid = (JSON.parse(readFileSync(path.join(dir, 'run.json'), 'utf8')) as RunManifest).pgid;
      if (pgid) await local.signal(pgid, 'SIGKILL');
    }
    rmSync(tmp, { recursive: true, force: true });
  });

  it('npm run package ships only what runs; installed, its first launch builds the runtime with progress and trains', async () => {
    const vsix = path.join(tmp, 'fsdp-studio.vsix');
    execFileSync(process.execPath, [path.join(repoRoot, 'scripts', 'package.mjs'), vsix], {
      cwd: repoRoot,
      stdio: 'pipe',
    });
    const workspace = path.join(tmp, 'workspace');
    mkdirSync(path.join(workspace, 'data'), { recursive: true });
    symlinkSync(
      path.join(SAMPLE_DATA, 'fortunes-byte-train.tok'),
      path.join(workspace, 'data', 'fortunes-byte-train.tok'),
    );
    writeFileSync(
      path.join(workspace, 'first.fsdp.yaml'),
      stringify({
        name: 'first',
        model: { d_model: 32, n_layers: 2, n_heads: 2, vocab_size: 256, max_seq_len: 32 },
        data: { train: 'data/fortunes-byte-train.tok', seq_len: 32 },
        training: { batch_size_per_gpu: 4, max_steps: 10, learning_rate: 0.003, warmup_steps: 2 },
        checkpointing: { save_every_n_steps: 0, save_final: false },
        launch: { target: 'local', device: 'cpu', nproc_per_node: 1 },
      }),
    );
    const runtimeCache = path.join(tmp, 'runtime-cache');
    // The suite's one real first-launch build from nothing: every object compiled here, none taken
    // from the compiler cache (the SSH host's first-use build in test/runs/remote-runtime.test.ts
    // takes the set-up's objects from it), as on a user's machine without ccache.
    vscode = await VsCodeSession.open({
      workspace,
      vsix,
      env: { FSDP_RUNTIME_CACHE: runtimeCache, CCACHE_DISABLE: '1' },
    });
    const installed = readdirSync(vscode.extensionsDir).find((d) => d.startsWith('fsdp-studio.fsdp-studio-'));
    assert.ok(installed, `installed: ${readdirSync(vscode.extensionsDir).join(', ')}`);
    const extensionDir = path.join(vscode.extensionsDir, installed);
    const shipped = filesUnder(extensionDir);
    assert.ok(
      shipped.includes('dist/extension.js') && shipped.includes('native/CMakeLists.txt'),
      'the bundles and the runtime sources ship',
    );
    assert.ok(
      shipped.includes('python/fsdp_studio/supervise.py') && shipped.includes('python/fsdp_studio/run_manifest.py'),
      'the companion ships: its supervisor owns every run, the native one this test launches too',
    );
    const strays = shipped.filter((f) =>
      /^(node_modules|test|samples|bench|scripts|extension|language-server|webview)\/|\.map$|\.ts$|^native\/(build|test)\//.test(
        f,
      ),
    );
    assert.deepEqual(strays, [], 'no TypeScript sources, tests, maps, node_modules or build outputs');

    await vscode.openFile('first.fsdp.yaml');
    await vscode.page.locator('.editor-instance .codelens-decoration a', { hasText: 'Launch' }).first().click();
    await vscode.waitForNotification(/FSDP Studio: building the native runtime/, 60_000);
    await vscode.screenshot('vsix-building-runtime');
    // A failed build says so in a toast: stop waiting then, with what it said.
    const done = await until(
      'the run to complete',
      async () => {
        const failed = await vscode!.page
          .locator('.notifications-toasts .notification-toast', { hasText: /failed/ })
          .allInnerTexts();
        if (failed.length) throw new Error(`the launch failed: ${failed.join(' | ')}`);
        return vscode!.inWebview<{ status: string; step?: number; runId: string } | null>(
          'window.fsdpDashboard?.header() ?? null',
          15 * 60_000,
        );
      },
      (h) => h?.status === 'completed',
      15 * 60_000,
      2000,
    );
    assert.ok(done);
    assert.equal(done.step, 10);
    const built = readdirSync(runtimeCache).filter((d) => !d.includes('.tmp-') && !d.endsWith('.build.log'));
    assert.equal(built.length, 1, "one build, named by the sources' hash");
    assert.ok(
      existsSync(path.join(runtimeCache, `${built[0]}.build.log`)),
      "the build's whole output is kept beside it",
    );
    assert.ok(
      existsSync(path.join(runtimeCache, built[0], 'Release', 'fsdp-train-native')) &&
        existsSync(path.join(runtimeCache, built[0], 'Release', 'fsdp_native.node')),
    );
    const manifest = JSON.parse(
      readFileSync(path.join(workspace, 'runs', done.runId, 'run.json'), 'utf8'),
    ) as RunManifest;
    assert.ok(
      manifest.command?.some((w) => w.startsWith(extensionDir)),
      `the run was started by the installed extension: ${manifest.command?.join(' ')}`,
    );
    await vscode.screenshot('vsix-first-run-completed');
  });
});
