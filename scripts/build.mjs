// Bundles the TypeScript with esbuild: the extension host code, the language server, the
// command-line tools (cli/) and one browser bundle per webview panel (webview/<panel>/main.ts).
import * as esbuild from 'esbuild';
import { existsSync, readdirSync, cpSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');

const common = {
  bundle: true,
  sourcemap: !production,
  minify: production,
  logLevel: 'warning',
  absWorkingDir: root,
};

const nodeEntries = {
  extension: 'extension/extension.ts',
  'language-server': 'language-server/server.ts',
  // Run by the extension's "Prepare the sample data" quick fix, in a process of its own.
  'prepare-data': 'samples/prepare-data.ts',
};
for (const name of existsSync(path.join(root, 'cli')) ? readdirSync(path.join(root, 'cli')) : []) {
  if (name.endsWith('.ts')) nodeEntries[`cli/${name.slice(0, -3)}`] = `cli/${name}`;
}
const webviewEntries = {};
for (const name of existsSync(path.join(root, 'webview')) ? readdirSync(path.join(root, 'webview')) : []) {
  if (existsSync(path.join(root, 'webview', name, 'main.ts')))
    webviewEntries[`webview/${name}`] = `webview/${name}/main.ts`;
}

const builds = [
  {
    ...common,
    entryPoints: Object.fromEntries(Object.entries(nodeEntries).filter(([, f]) => existsSync(path.join(root, f)))),
    outdir: dist,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    // Prefer ES module builds: jsonc-parser's UMD main loads its parts with a dynamic require
    // that esbuild cannot follow.
    mainFields: ['module', 'main'],
    // tokenizers: a native module (its .node binaries), loaded from node_modules when `prepare` runs.
    external: ['vscode', 'tokenizers'],
  },
];
if (Object.keys(webviewEntries).length) {
  builds.push({
    ...common,
    entryPoints: webviewEntries,
    outdir: dist,
    platform: 'browser',
    target: 'es2022',
    format: 'iife',
    loader: { '.css': 'css', '.ttf': 'file' },
  });
}

// Assets the webviews load by URL (CSP allows only the built assets folder).
function copyAssets() {
  const assets = path.join(dist, 'webview', 'assets');
  mkdirSync(assets, { recursive: true });
  const codicons = path.join(root, 'node_modules', '@vscode', 'codicons', 'dist');
  for (const f of ['codicon.css', 'codicon.ttf'])
    if (existsSync(path.join(codicons, f))) cpSync(path.join(codicons, f), path.join(assets, f));
  const uplotCss = path.join(root, 'node_modules', 'uplot', 'dist', 'uPlot.min.css');
  if (existsSync(uplotCss)) cpSync(uplotCss, path.join(assets, 'uPlot.min.css'));
}

// The Node-API headers an installed extension builds its native addon with on first use
// (extension/local-runtime.ts; native/CMakeLists.txt FSDP_NODE_API_HEADERS): from npm's
// node-api-headers and node-addon-api, so the build needs no download and no Node install.
function copyNodeApiHeaders() {
  const out = path.join(dist, 'native-headers');
  const from = [
    [path.join(root, 'node_modules', 'node-api-headers', 'include'), path.join(out, 'node-api')],
    [path.join(root, 'node_modules', 'node-addon-api'), path.join(out, 'node-addon-api')],
  ];
  for (const [src, dest] of from) {
    if (!existsSync(src)) continue;
    mkdirSync(dest, { recursive: true });
    for (const f of readdirSync(src)) if (f.endsWith('.h')) cpSync(path.join(src, f), path.join(dest, f));
  }
}

if (watch) {
  const contexts = await Promise.all(builds.map((b) => esbuild.context(b)));
  copyAssets();
  await Promise.all(contexts.map((c) => c.watch()));
  console.log('watching for changes…');
} else {
  await Promise.all(builds.map((b) => esbuild.build(b)));
  copyAssets();
  copyNodeApiHeaders();
}
