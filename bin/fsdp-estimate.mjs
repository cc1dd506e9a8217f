#!/usr/bin/env node
// `npx fsdp-estimate`: runs the bundled CLI (dist/cli/fsdp-estimate.js, from cli/fsdp-estimate.ts;
// `npm run build` makes it, `npm start` and `npm test` build it too).
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const bundle = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'cli', 'fsdp-estimate.js');
if (!existsSync(bundle)) {
  console.error(`fsdp-estimate: ${bundle} is not built; run npm run build`);
  process.exit(2);
}
const { main } = createRequire(import.meta.url)(bundle);
process.exitCode = main(process.argv.slice(2));
