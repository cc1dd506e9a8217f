// Runs code-server for `npm start` until interrupted. The port is FSDP_STUDIO_PORT or a free one.
import path from 'node:path';
import { repoRoot, startCodeServer } from './code-server';

async function main(): Promise<void> {
  const workspace = process.argv[2] ?? path.join(repoRoot, 'samples');
  const port = process.env.FSDP_STUDIO_PORT ? Number(process.env.FSDP_STUDIO_PORT) : undefined;
  const server = await startCodeServer({ workspace, dataDir: path.join(repoRoot, '.tools', 'vscode-data'), port });
  console.log(
    `\nFSDP Studio is running in VS Code (code-server) at:\n\n    ${server.url}?folder=${encodeURIComponent(workspace)}\n\nIt listens on 127.0.0.1 only. Press Ctrl+C to stop it.`,
  );
  const stop = () => void server.stop().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  server.process.on('exit', (code) => {
    console.error(`code-server exited (${code}).`);
    process.exit(1);
  });
}

main().catch((e: Error) => {
  console.error(`npm start: ${e.message}`);
  process.exit(1);
});
