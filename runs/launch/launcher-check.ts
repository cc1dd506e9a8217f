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
import { PYTHON_WORD } from '../machines/python-check';

/** Exit 3: the folder is not there; 1/127: the program is not (not found, or not executable). */
const FIND = [
  'case $1 in "~") d=$HOME ;; "~/"*) d=$HOME/${1#"~/"} ;; *) d=$1 ;; esac',
  'cd -- "$d" 2>/dev/null || exit 3',
  // $3: the chosen Python's folder, first on the command's PATH as the supervisor puts it.
  'case $3 in "") ;; "~/"*) PATH=$HOME/${3#"~/"}:$PATH ;; *) PATH=$3:$PATH ;; esac',
  'case $2 in "~/"*) p=$HOME/${2#"~/"} ;; *) p=$2 ;; esac',
  'case $p in */*) test -f "$p" && test -x "$p" ;; *) command -v -- "$p" >/dev/null ;; esac',
].join('\n');
const NO_FOLDER = 3;

/** How to get each launcher that is not found. */
const INSTALL: Record<string, string> = {
  deepspeed: 'DeepSpeed installs it (pip install deepspeed, in the Python environment your script uses)',
  accelerate: 'accelerate installs it (pip install accelerate, in the Python environment your script uses)',
  torchrun: 'PyTorch installs it (pip install torch, in the Python environment your script uses)',
};

/** Why the command's launcher cannot start on the host, or undefined when it is there. */
export async function launcherProblem(
  host: LoginHost,
  spec: ResolvedLaunchSpec,
  cwd = spec.cwd,
): Promise<string | undefined> {
  // A chosen Python (the spec's python:, the Python extension's) runs a bare python word of the
  // command and comes first on its PATH (the supervisor's --use-this-python): look as it will.
  const chosen = spec.pythonSource ? spec.python : undefined;
  const program = chosen && PYTHON_WORD.test(spec.command.argv[0]) ? chosen : spec.command.argv[0];
  const first = chosen?.includes('/') ? path.posix.dirname(chosen) : '';
  const where = host.target === LOCAL ? 'this machine' : host.target;
  const r = await host.run(['/bin/sh', '-c', FIND, 'fsdp-find-launcher', cwd, program, first], {
    env: spec.env,
    timeoutMs: 30_000,
  });
  if (r.code === 0) return undefined;
  if (r.code === NO_FOLDER) return `the command's folder ${cwd} is not on ${where}`;
  const name = path.basename(program);
  const how = INSTALL[name] ?? 'install it there';
  const sought = program.includes('/')
    ? `${program} is not an executable file (from ${cwd})`
    : `${program} is not on the PATH`;
  return `cannot start ${name} on ${where}: ${sought}. ${how[0].toUpperCase()}${how.slice(1)}, or give its full path in the command (e.g. /path/to/venv/bin/${name}).`;
}
