// ESLint for the project's TypeScript and build scripts (`npm run lint`; a unit test runs it too).
// Syntax-level rules only (no type-aware rules): `tsc --noEmit` already checks types, and
// type-aware linting would cost a second full program build on a 2-core machine.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// The Node globals our plain .mjs scripts use (TypeScript files get `no-undef` from tsc instead).
const nodeGlobals = Object.fromEntries(
  [
    'process',
    'console',
    'Buffer',
    'URL',
    'setTimeout',
    'clearTimeout',
    'setInterval',
    'clearInterval',
    'setImmediate',
    'AbortController',
    'TextDecoder',
    'TextEncoder',
    'performance',
    'fetch',
    'structuredClone',
    'queueMicrotask',
  ].map((name) => [name, 'readonly']),
);

export default tseslint.config(
  {
    ignores: [
      'node_modules/**',
      'dist/**',
      'native/build*/**',
      '.tools/**',
      'test-output/**',
      'core/generated/**',
      'samples/data/**',
      'samples/runs/**',
      'runs/*-????????-??????-*/**',
      '.gpu-debs/**',
      '.venv/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      // `const { end_reason: _ended, ...kept } = m` is how a key is dropped from a copy; an
      // interface method's implementation may not need every argument (`_path`).
      '@typescript-eslint/no-unused-vars': ['error', { ignoreRestSiblings: true, argsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    languageOptions: { globals: nodeGlobals },
  },
);
