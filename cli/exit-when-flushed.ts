// Ending a command-line tool with an exit code without losing its output: process.exit() drops
// whatever a pipe has not taken yet, so a long list of config problems read through a pipe (by
// `less`, or by the editor's own child process) lost all but its first 64 KiB.

/** Exits with `code` once everything written to stdout and stderr so far has been handed on. */
export function exitWhenFlushed(code: number): void {
  let pending = 2;
  const flushed = () => {
    if (--pending === 0) process.exit(code);
  };
  process.stdout.write('', flushed);
  process.stderr.write('', flushed);
}
