#!/usr/bin/env node
// `npx fsdp-runs`: runs the bundled CLI (dist/cli/fsdp-runs.js, from cli/fsdp-runs.ts;
// `npm run build` makes it, `npm start` and `npm test` build it too).
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const bundle = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'cli', 'fsdp-runs.js');
if (!existsSync(bundle)) {
  console.error(`fsdp-runs: ${bundle} is not built; run npm run build`);
  process.exit(2);
}
const { main } = createRequire(import.meta.url)(bundle);
process.exitCode = await main(process.argv.slice(2));
