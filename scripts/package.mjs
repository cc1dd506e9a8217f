// `npm run package [OUT.vsix]`: the .vsix people install (code --install-extension fsdp-studio-<version>.vsix).
// vsce runs the production build (vscode:prepublish), then .vscodeignore decides what ships: the
// bundles without source maps, the native runtime's sources (built on the user's machine on first
// use, runs/runtime/local-runtime.ts) and the schemas. node_modules is not shipped: esbuild
// bundles every dependency. Afterwards dist/ gets its development build back (with source maps).
// Prints the file's path, size and file count.
import { spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
const out = path.resolve(process.argv[2] ?? path.join(root, `${pkg.name}-${pkg.version}.vsix`));

// vsce runs the vscode:prepublish script (the production build) itself.
const vsce = path.join(root, 'node_modules', '@vscode', 'vsce', 'vsce');
const r = spawnSync(
  process.execPath,
  [vsce, 'package', '--no-dependencies', '--allow-missing-repository', '--skip-license', '--out', out],
  { cwd: root, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' },
);
process.stdout.write(r.stdout ?? '');
if (r.status !== 0) {
  console.error(`npm run package: vsce failed (exit ${r.status})`);
  process.exit(1);
}
const files = /Packaged: .*\((\d+) files/.exec(r.stdout ?? '')?.[1];
const dev = spawnSync(process.execPath, [path.join(root, 'scripts', 'build.mjs')], { cwd: root, stdio: 'inherit' });
if (dev.status !== 0)
  console.error('npm run package: the development build of dist/ failed afterwards; run npm run build');
console.log(`packaged ${out}: ${(statSync(out).size / 2 ** 20).toFixed(1)} MiB${files ? `, ${files} files` : ''}`);
