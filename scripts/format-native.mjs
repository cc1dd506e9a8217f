// clang-format over the native runtime's C++ and CUDA sources (native/src, native/test,
// native/bench), with the style in .clang-format: `--write` rewrites them, `--check` (the default)
// fails naming each file that is not formatted. clang-format comes from Debian (apt-get install
// clang-format); its absence is said, not guessed around.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const write = process.argv.includes('--write');
const files = ['native/src', 'native/test', 'native/bench'].flatMap((d) =>
  readdirSync(path.join(root, d), { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.(h|cc|cu|cuh)$/.test(f))
    .map((f) => path.join(root, d, f)),
);
const probe = spawnSync('clang-format', ['--version'], { encoding: 'utf8' });
if (probe.error) {
  console.error('format-native: clang-format is not installed (apt-get install clang-format)');
  process.exit(2);
}
const r = spawnSync(
  'clang-format',
  [write ? '-i' : '--dry-run', ...(write ? [] : ['-Werror']), '--style=file', ...files],
  { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 },
);
if (r.status !== 0) {
  const bad = [
    ...new Set(
      [...(r.stderr ?? '').matchAll(/^(\S+\.(?:h|cc|cu|cuh)):\d+:\d+: (?:error|warning)/gm)].map((m) =>
        path.relative(root, m[1]),
      ),
    ),
  ];
  console.error(bad.length ? `format-native: not formatted (npm run format):\n  ${bad.join('\n  ')}` : r.stderr);
  process.exit(1);
}
console.log(`format-native: ${files.length} files ${write ? 'formatted' : 'formatted already'}`);
