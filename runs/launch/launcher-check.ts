// Before a person's command starts on this machine or an SSH host, its first word — the launcher:
// deepspeed, accelerate, torchrun, python… — must be found there as the command will look for it
// (on the PATH of the command's environment, or the path it names from the command's folder);
// otherwise the run would start only to fail with "No such file or directory". Run through the
// host's argument-vector runner, so the words stay data over ssh too (runs/machines/login-host.ts);
// /bin/sh by its path, since the command's own PATH (which may lack it) is the one searched.
import path from 'node:path';
import type { ResolvedLaunchSpec } from '../../core/config/launch-spec';
import type { LoginHost } from '../machines/login-host';
import { LOCAL } from '../machines/run-machine';

/** Exit 3: the folder is not there; 1/127: the program is not (not found, or not executable). */
const FIND = [
  'case $1 in "~") d=$HOME ;; "~/"*) d=$HOME/${1#"~/"} ;; *) d=$1 ;; esac',
  'cd -- "$d" 2>/dev/null || exit 3',
  'case $2 in */*) test -f "$2" && test -x "$2" ;; *) command -v -- "$2" >/dev/null ;; esac',
].join('\n');
const NO_FOLDER = 3;

/** How to get each launcher that is not found. */
const INSTALL: Record<string, string> = {
  deepspeed: 'DeepSpeed installs it (pip install deepspeed, in the Python environment your script uses)',
  accelerate: 'accelerate installs it (pip install accelerate, in the Python environment your script uses)',
  torchrun: 'PyTorch installs it (pip install torch, in the Python environment your script uses)',
};

/** Why the command's launcher cannot start on the host, or undefined when it is there. */
export async function launcherProblem(host: LoginHost, spec: ResolvedLaunchSpec, cwd = spec.cwd): Promise<string | undefined> {
  const program = spec.command.argv[0];
  const where = host.target === LOCAL ? 'this machine' : host.target;
  const r = await host.run(['/bin/sh', '-c', FIND, 'fsdp-find-launcher', cwd, program], { env: spec.env, timeoutMs: 30_000 });
  if (r.code === 0) return undefined;
  if (r.code === NO_FOLDER) return `the command's folder ${cwd} is not on ${where}`;
  const name = path.basename(program);
  const how = INSTALL[name] ?? 'install it there';
  const sought = program.includes('/') ? `${program} is not an executable file (from ${cwd})` : `${program} is not on the PATH`;
  return `cannot start ${name} on ${where}: ${sought}. ${how[0].toUpperCase()}${how.slice(1)}, or give its full path in the command (e.g. /path/to/venv/bin/${name}).`;
}
