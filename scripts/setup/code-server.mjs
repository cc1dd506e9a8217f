// Installs code-server 4.100.3 (VS Code 1.100.3, the newest that runs on Node 20) into
// .tools/code-server without any download but npm packages: its own install scripts would fetch
// ripgrep and prebuilt binaries, so they are skipped and the native modules rebuilt from source.
// Recipe verified on this machine kind (../shared/notes/environment.md).
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  readFileSync,
  chmodSync,
} from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const CODE_SERVER_VERSION = '4.100.3';
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const CODE_SERVER_DIR = path.join(root, '.tools', 'code-server');
const pkgDir = path.join(CODE_SERVER_DIR, 'node_modules', 'code-server');
/** The script that starts code-server with the Node running this script. */
export const CODE_SERVER_ENTRY = path.join(pkgDir, 'out', 'node', 'entry.js');
const stamp = path.join(CODE_SERVER_DIR, 'installed-version');

/** Whether this version of code-server is installed for this Node. */
export function codeServerReady() {
  return (
    existsSync(stamp) &&
    readFileSync(stamp, 'utf8') === `${CODE_SERVER_VERSION} ${process.version}` &&
    existsSync(CODE_SERVER_ENTRY)
  );
}

export async function ensureCodeServer({ log = console.log } = {}) {
  if (codeServerReady()) return;
  log(`installing code-server ${CODE_SERVER_VERSION} into .tools/code-server (about 3 minutes, once)…`);
  rmSync(CODE_SERVER_DIR, { recursive: true, force: true });
  mkdirSync(CODE_SERVER_DIR, { recursive: true });
  writeFileSync(
    path.join(CODE_SERVER_DIR, 'package.json'),
    JSON.stringify({ name: 'fsdp-studio-tools', private: true }) + '\n',
  );
  const vscodeDir = path.join(pkgDir, 'lib', 'vscode');
  const env = { ...process.env, npm_config_yes: 'true', npm_config_audit: 'false', npm_config_fund: 'false' };
  npm(['install', '--ignore-scripts', '--no-save', `code-server@${CODE_SERVER_VERSION}`], CODE_SERVER_DIR, env);
  npm(['install', '--unsafe-perm', '--omit=dev', '--ignore-scripts'], vscodeDir, env);
  // @vscode/ripgrep's postinstall downloads a binary: use Debian's ripgrep instead.
  const rgDir = path.join(vscodeDir, 'node_modules', '@vscode', 'ripgrep', 'bin');
  mkdirSync(rgDir, { recursive: true });
  copyFileSync('/usr/bin/rg', path.join(rgDir, 'rg'));
  chmodSync(path.join(rgDir, 'rg'), 0o755);
  npm(['rebuild', '--unsafe-perm'], vscodeDir, env); // node-pty and friends, from source
  npm(['install', '--unsafe-perm', '--omit=dev'], path.join(vscodeDir, 'extensions'), env);
  const asar = path.join(vscodeDir, 'node_modules.asar');
  rmSync(asar, { force: true, recursive: true });
  symlinkSync('node_modules', asar);
  npm(['rebuild', 'argon2', '--unsafe-perm'], CODE_SERVER_DIR, env);
  writeFileSync(stamp, `${CODE_SERVER_VERSION} ${process.version}`);
}

function npm(args, cwd, env) {
  const r = spawnSync('npm', args, { cwd, env, stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0)
    throw new Error(`npm ${args.join(' ')} (in ${path.relative(root, cwd)}) failed with exit code ${r.status}`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  ensureCodeServer().catch((e) => {
    console.error(`fsdp-studio: ${e.message}`);
    process.exit(1);
  });
}
