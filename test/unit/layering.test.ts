import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { importCycles, reachable, readImportGraph, type ImportGraph } from '../harness/import-graph';

const root = path.resolve(__dirname, '../..');

// The layers the README's layout table promises, checked on the real files' imports:
// core/ (pure domain logic) ← runs/ (the run machinery) ← extension/, cli/, bench/, … ; only the
// extension speaks to VS Code. Tests may import whatever they test, so test/ is read but not held
// to the layering.
const PRODUCT = ['core', 'runs', 'extension', 'language-server', 'webview', 'cli', 'bench', 'samples', 'bin'];

describe('layering: the import graph of the project', () => {
  const graph = readImportGraph(root, [...PRODUCT, 'test']);
  const inFolder = (folder: string) => [...graph.keys()].filter((f) => f.startsWith(`${folder}/`));

  it("reads the real imports (the extension imports vscode, the editor's runs import the watch)", () => {
    assert.ok(graph.get('extension/studio-context.ts')?.some((e) => e.to === 'vscode' && e.runtime));
    assert.ok(graph.get('extension/extension.ts')?.some((e) => e.to === 'vscode' && !e.runtime));
    assert.ok(reachable(graph, 'extension/extension.ts').has('runs/watch/run-watch.ts'));
    assert.ok(inFolder('runs').length >= 30, `only ${inFolder('runs').length} files under runs/`);
  });

  it('nothing outside extension/ imports extension/', () => {
    const offenders = PRODUCT.filter((f) => f !== 'extension')
      .flatMap(inFolder)
      .flatMap((file) =>
        (graph.get(file) ?? []).filter((e) => e.local && e.to.startsWith('extension/')).map((e) => `${file} → ${e.to}`),
      );
    assert.deepEqual(offenders, []);
  });

  it('nothing under runs/, core/, cli/, bench/ or language-server/ reaches vscode, even through other files', () => {
    const offenders: string[] = [];
    for (const file of ['runs', 'core', 'cli', 'bench', 'language-server'].flatMap(inFolder)) {
      for (const [reached, via] of reachable(graph, file)) {
        if (graph.get(reached)?.some((e) => e.to === 'vscode' && e.runtime))
          offenders.push(`${via.join(' → ')} → vscode`);
      }
    }
    assert.deepEqual(offenders.slice(0, 10), []);
  });

  it('core/ imports neither runs/ nor extension/ (it is the bottom layer)', () => {
    const offenders = inFolder('core').flatMap((file) =>
      (graph.get(file) ?? []).filter((e) => e.local && !e.to.startsWith('core/')).map((e) => `${file} → ${e.to}`),
    );
    assert.deepEqual(offenders, []);
  });

  it('the CLIs and benchmarks use runs/ (fsdp-runs and the watch benchmark read runs through it)', () => {
    assert.ok([...reachable(graph, 'cli/fsdp-runs.ts').keys()].some((f) => f.startsWith('runs/')));
    assert.ok([...reachable(graph, 'bench/watch/run.ts').keys()].some((f) => f.startsWith('runs/')));
  });

  it('every launch goes through the one door (runs/launch/launch-run.ts): no one else calls a launch strategy', () => {
    const strategies =
      /\b(launchLocal|launchRemote|launchHosts|launchCommandLocal|launchCommandRemote|launchSlurm|launchCommandOnSlurm)\b/;
    const home = new Set([
      'test/unit/layering.test.ts',
      'runs/launch/launch-run.ts',
      'runs/launch/launcher.ts',
      'runs/launch/command-launcher.ts',
      'runs/launch/hosts-launch.ts',
      'runs/slurm/slurm-launch.ts',
      'runs/slurm/slurm-command-launch.ts',
    ]);
    const offenders = [...graph.keys()].filter(
      (f) => !home.has(f) && strategies.test(readFileSync(path.join(root, f), 'utf8')),
    );
    assert.deepEqual(offenders, []);
  });

  it('no runtime import cycle between files', () => {
    const product = new Map([...graph].filter(([file]) => PRODUCT.some((f) => file.startsWith(`${f}/`))));
    assert.deepEqual(importCycles(product), []);
  });

  it('the cycle finder finds a cycle, and ignores one made only of type imports', () => {
    const edge = (to: string, runtime = true) => ({ to, local: true, runtime });
    const planted: ImportGraph = new Map([
      ['a.ts', [edge('b.ts')]],
      ['b.ts', [edge('c.ts')]],
      ['c.ts', [edge('a.ts')]],
      ['d.ts', [edge('e.ts')]],
      ['e.ts', [edge('d.ts', false)]],
    ]);
    assert.deepEqual(importCycles(planted), [['a.ts', 'b.ts', 'c.ts']]);
  });
});

// The native runtime's folders (native/src/<folder>/) include each other in one direction only, so
// each can be read and tested with what it stands on and nothing above it.
describe('layering: the native runtime folders', () => {
  const src = path.join(root, 'native/src');
  const folders = readdirSync(src, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name);
  const folderEdges = new Map<string, Set<string>>();
  for (const folder of folders) {
    const targets = new Set<string>();
    for (const file of readdirSync(path.join(src, folder), { recursive: true, encoding: 'utf8' })) {
      if (!/\.(h|cc|cu|cuh)$/.test(file)) continue;
      for (const m of readFileSync(path.join(src, folder, file), 'utf8').matchAll(/^#include "([a-z_]+)\/[^"]+"/gm)) {
        if (m[1] !== folder && folders.includes(m[1])) targets.add(m[1]);
      }
    }
    folderEdges.set(folder, targets);
  }

  it('reads the real includes (train/ includes model/)', () => {
    assert.ok(folderEdges.get('train')?.has('model'));
  });

  it('no two folders include each other, directly or around a loop', () => {
    const graph: ImportGraph = new Map(
      [...folderEdges].map(([f, to]) => [f, [...to].map((t) => ({ to: t, local: true, runtime: true }))]),
    );
    assert.deepEqual(importCycles(graph), []);
  });

  it('train/ holds the training loop, not the memory check, the watchdog, the lock or the smoke step', () => {
    const train = readdirSync(path.join(src, 'train'));
    for (const gone of ['memory_check', 'collective_watchdog', 'run_folder_lock', 'smoke_step']) {
      assert.ok(!train.some((f) => f.startsWith(`${gone}.`)), `native/src/train/ still holds ${gone}`);
    }
  });
});
