// Preloaded (node --import) into the command-line tools `npm run bench:lsp` times: writes the
// process's own CPU time at exit to $FSDP_BENCH_CPU_FILE, which other tenants of a shared machine
// do not inflate as they do its wall time.
import { writeFileSync } from 'node:fs';

process.on('exit', () => {
  const c = process.cpuUsage();
  writeFileSync(process.env.FSDP_BENCH_CPU_FILE, JSON.stringify({ cpuMs: (c.user + c.system) / 1000 }));
});
