// Before a person's command starts on this machine or an SSH host, its first word — the launcher:
// deepspeed, accelerate, torchrun, python… — must be found there as the command will look for it
// (on the PATH of the command's environment, or the path it names from the command's folder);
// otherwise the run would start only to fail with "No such file or directory". Run through the
// host's argument-vector runner, so the words stay data over ssh too (runs/machines/login-host.ts);
// /bin/sh by its path, since the command's own PATH (which may lack it) is the one searched.
// The Python that runs the run's owner (the companion's supervisor, Python >= 3.9) is asked for its
// version the same way: a Python 2 named python3 would otherwise fail with a raw SyntaxError. The
// same check, alone, is asked of the python3 that owns a native run (supervisorPythonProblem).
import path from 'node:path';
import type { ResolvedLaunchSpec } from '../../core/config/launch-spec';
import type { LoginHost } from '../machines/login-host';
import { LOCAL } from '../machines/run-machine';
import { MIN_PYTHON, PYTHON_WORD } from '../machines/python-check';

/**
 * $1: the Python that will run the supervisor, $2: how many seconds it has to answer. Exit 4: it is
 * older than MIN_PYTHON (its version printed); 5: it did not answer; 0 otherwise. A Python that is
 * not found here is left to the start, which says so with what it printed (until-owned.ts).
 */
const PYTHON_CHECK = [
  'case $1 in "~/"*) py=$HOME/${1#"~/"} ;; *) py=$1 ;; esac',
  // Python 2 and 3 alike parse this; it prints the version and says whether it is too old. Under
  // timeout(1): a Python that hangs is said to hang here (exit 124), not waited on.
  `timeout "$2" "$py" -c 'import sys; v = sys.version_info; sys.stdout.write("%d.%d.%d" % (v[0], v[1], v[2])); sys.exit(4 if v < (${MIN_PYTHON.join(', ')}) else 0)' 2>/dev/null`,
  'case $? in 4) exit 4 ;; 124) exit 5 ;; esac',
  'exit 0',
];

/**
 * Exit 3: the folder is not there; 1/127: the program is not (not found, or not executable); then
 * PYTHON_CHECK of the supervisor's Python ($4, within $5 s).
 */
const FIND = [
  'case $1 in "~") d=$HOME ;; "~/"*) d=$HOME/${1#"~/"} ;; *) d=$1 ;; esac',
  'cd -- "$d" 2>/dev/null || exit 3',
  // $3: the chosen Python's folder, first on the command's PATH as the supervisor puts it.
  'case $3 in "") ;; "~/"*) PATH=$HOME/${3#"~/"}:$PATH ;; *) PATH=$3:$PATH ;; esac',
  'case $2 in "~/"*) p=$HOME/${2#"~/"} ;; *) p=$2 ;; esac',
  'case $p in */*) test -f "$p" && test -x "$p" ;; *) command -v -- "$p" >/dev/null ;; esac || exit',
  'set -- "$4" "$5"',
  ...PYTHON_CHECK,
].join('\n');
const NO_FOLDER = 3;
const OLD_PYTHON = 4;
const PYTHON_HANGS = 5;

/** A value as a person wrote it: plain when it is a plain word, else quoted, never mangled. */
function shown(value: string): string {
  return /^[\w@%+=:,./~-]+$/.test(value) ? value : JSON.stringify(value);
}

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
  pythonWithinS = 20,
): Promise<string | undefined> {
  // A chosen Python (the spec's python:, the Python extension's) runs a bare python word of the
  // command and comes first on its PATH (the supervisor's --use-this-python): look as it will.
  const chosen = spec.pythonSource ? spec.python : undefined;
  const program = chosen && PYTHON_WORD.test(spec.command.argv[0]) ? chosen : spec.command.argv[0];
  const first = chosen?.includes('/') ? path.posix.dirname(chosen) : '';
  const where = host.target === LOCAL ? 'this machine' : host.target;
  const r = await host.run(
    ['/bin/sh', '-c', FIND, 'fsdp-find-launcher', cwd, program, first, spec.python, String(pythonWithinS)],
    {
      env: spec.env,
      timeoutMs: 30_000,
    },
  );
  if (r.code === 0) return undefined;
  if (r.code === NO_FOLDER) return `the command's folder ${shown(cwd)} is not on ${where}`;
  const python = pythonVerdict(r, spec.python, where, pythonWithinS, {
    by: spec.pythonSource ? `chosen by the ${spec.pythonSource}` : 'the python3 on the PATH there',
    newer: `Name a Python ${MIN_PYTHON.join('.')} or newer in the launch spec's python: key.`,
    another: "Name another Python in the launch spec's python: key.",
  });
  if (python) return python;
  const name = path.basename(program);
  const plain = shown(program) === program;
  const how = INSTALL[name] ?? 'install it there';
  const sought = program.includes('/')
    ? `${shown(program)} is not an executable file (from ${shown(cwd)})`
    : `${shown(program)} is not on the PATH`;
  // A hostile or odd value is quoted whole, not cut at its last slash.
  const what = plain ? name : shown(program);
  const example = plain ? ` (e.g. /path/to/venv/bin/${name})` : '';
  return `cannot start ${what} on ${where}: ${sought}. ${how[0].toUpperCase()}${how.slice(1)}, or give its full path in the command${example}.`;
}

/**
 * Why the Python that owns a native run (SUPERVISOR_PYTHON, the host's python3: native runs have
 * no launch spec to name one) cannot run FSDP Studio's supervisor on the host, or undefined: the
 * same check as a command's launch, asked alone.
 */
export async function supervisorPythonProblem(
  host: LoginHost,
  python: string,
  withinS = 20,
): Promise<string | undefined> {
  const where = host.target === LOCAL ? 'this machine' : host.target;
  const r = await host.run(['/bin/sh', '-c', PYTHON_CHECK.join('\n'), 'fsdp-check-python', python, String(withinS)], {
    timeoutMs: 30_000,
  });
  return pythonVerdict(r, python, where, withinS, {
    by: "the python3 on the PATH there, which runs every native run's owner",
    newer: `Put a Python ${MIN_PYTHON.join('.')} or newer first on the PATH there as python3.`,
    another: 'Put another Python first on the PATH there as python3.',
  });
}

/** PYTHON_CHECK's answer in words: what was found, where, who chose it, and what to do. */
function pythonVerdict(
  r: { code: number; stdout: string },
  python: string,
  where: string,
  withinS: number,
  words: { by: string; newer: string; another: string },
): string | undefined {
  if (r.code === OLD_PYTHON)
    return `FSDP Studio's supervisor needs Python >= ${MIN_PYTHON.join('.')}, found ${r.stdout.trim() || 'an older one'}: ${shown(python)} on ${where} (${words.by}). ${words.newer}`;
  if (r.code === PYTHON_HANGS)
    return `${shown(python)} on ${where}, the Python that runs FSDP Studio's supervisor, did not say its version within ${withinS} s: it hangs. ${words.another}`;
  return undefined;
}
