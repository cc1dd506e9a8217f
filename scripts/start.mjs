// `npm start`: sets up whatever is missing, then opens VS Code with the extension loaded on the
// samples/ workspace: the user's own `code` where installed, otherwise a local code-server on
// 127.0.0.1 whose URL is printed (Ctrl+C stops it).
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { setup, root } from './setup/index.mjs';

const samples = path.join(root, 'samples');
const hasCode =
  !process.env.FSDP_STUDIO_CODE_SERVER && spawnSync('code', ['--version'], { stdio: 'ignore' }).status === 0;

try {
  await setup('start', { codeServer: !hasCode });
} catch (e) {
  console.error(`npm start: set-up failed: ${e.message}`);
  process.exit(1);
}

if (hasCode) {
  spawn('code', ['--extensionDevelopmentPath', root, samples], { stdio: 'ignore', detached: true }).unref();
  console.log(`Opened VS Code on ${samples} with FSDP Studio loaded from ${root}.`);
} else {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(root, 'scripts', 'serve-code-server.ts'), samples],
    { cwd: root, stdio: 'inherit' },
  );
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
  child.on('exit', (code) => process.exit(code ?? 0));
}
