// Which Python a person's command gets, and whether it has PyTorch: the interpreter's own answer
// (sys.executable, its version, torch's version and whether CUDA is available), asked on this
// machine or an SSH host by running it with a fixed probe program. "FSDP: Check environment" shows
// it, for the interpreter a launch would use there.
import { execFile } from 'node:child_process';
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import path from 'node:path';
import { runSsh, type SshSettings } from './ssh';
import type { RemoteWord } from '../../core/remote/remote-command';
import type { ResolvedLaunchSpec } from '../../core/config/launch-spec';

/** The interpreter's own answer. */
export interface PythonReport {
  executable: string;
  version: string;
  torch?: string;
  cuda?: boolean;
  cudaVersion?: string | null;
  gpus?: number;
  /** Why `import torch` failed ("ModuleNotFoundError: No module named 'torch'"). */
  torchError?: string;
}

/** One row of the environment check (the shape of Check environment's rows). */
export interface PythonCheckRow {
  name: string;
  ok: boolean;
  detail: string;
  fix?: string;
  notRun?: boolean;
}

/** Where to ask: this machine, or an SSH host with the editor's ssh settings. */
export type PythonWhere = { host: 'local' } | { host: string; ssh: SshSettings };

// A constant program (no user value in it): the interpreter describes itself as one JSON line.
const PROBE = [
  'import json, sys',
  'r = {"executable": sys.executable, "version": sys.version.split()[0]}',
  'try:',
  '    import torch',
  '    r["torch"] = torch.__version__',
  '    r["cuda"] = bool(torch.cuda.is_available())',
  '    r["cudaVersion"] = torch.version.cuda',
  '    r["gpus"] = torch.cuda.device_count() if r["cuda"] else 0',
  'except Exception as e:',
  '    r["torchError"] = type(e).__name__ + ": " + str(e)',
  'print("FSDP_PYTHON " + json.dumps(r))',
].join('\n');

/** A command's first word that names a Python by name only (python, python3, python3.11), as the supervisor reads it. */
export const PYTHON_WORD = /^python(\d+(\.\d+)?)?$/;

/**
 * The Python a command runs under on this machine, as the supervisor would start it: the chosen
 * interpreter for a bare python word; else the first word found (a path relative to cwd, or a name
 * on PATH with the chosen interpreter's folder first) when it is a Python, or the interpreter its
 * #! line names (torchrun, accelerate, deepspeed). Undefined when the first word is not found.
 */
export function commandInterpreter(
  argv: string[],
  cwd: string,
  chosen: string | undefined,
  envPath: string | undefined,
): string | undefined {
  const first = argv[0];
  if (!first) return undefined;
  const dirs = [
    ...(chosen && chosen.includes('/') ? [path.dirname(chosen)] : []),
    ...(envPath ?? '').split(':').filter(Boolean),
  ];
  if (PYTHON_WORD.test(first)) return chosen ?? which(first, dirs);
  const exe = first.includes('/') ? path.resolve(cwd, first) : which(first, dirs);
  if (!exe || !isFile(exe)) return undefined;
  if (PYTHON_WORD.test(path.basename(exe))) return exe;
  const line = firstLine(exe);
  if (!line?.startsWith('#!')) return exe;
  const words = line.slice(2).trim().split(/\s+/);
  if (path.basename(words[0] ?? '') === 'env') {
    const name = words.slice(1).find((w) => !w.startsWith('-'));
    return name ? (name.includes('/') ? name : which(name, dirs)) : undefined;
  }
  return words[0] || undefined;
}

function which(name: string, dirs: string[]): string | undefined {
  for (const dir of dirs) {
    const p = path.join(dir, name);
    if (isFile(p)) return p;
  }
  return undefined;
}

function isFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

function firstLine(file: string): string | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    const buf = Buffer.alloc(512);
    const n = readSync(fd, buf, 0, buf.length, 0);
    return buf.subarray(0, n).toString('utf8').split('\n')[0];
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** A Python a launch spec's command runs, for the environment check. */
export interface PythonInUse {
  python: string;
  /** Who chose it, in words ("python: in x.fsdp-launch.yaml"). */
  chosenBy: string;
  /** The command runs this Python: without torch it fails. */
  torchNeeded: boolean;
  /** The command's first word is not there: nothing to ask. */
  missing?: boolean;
}

/**
 * The Python a spec's command runs (withSelectedPython applied first): on this machine as the
 * supervisor will find it (python:, the Python extension's selection, the command's own first word
 * or its #! line); on an SSH host its python:, the command's own python, else python3 (which the
 * command may not use: torch is then not required of it). `rel` names the spec in the words.
 */
export function pythonInUse(spec: ResolvedLaunchSpec, rel: string, localPath: string | undefined): PythonInUse {
  const argv = spec.command.argv;
  const chosen =
    spec.pythonSource === 'launch spec'
      ? `python: in ${rel}`
      : spec.pythonSource === 'Python extension'
        ? `the Python extension's selection, for ${rel}`
        : undefined;
  if (spec.target === 'local') {
    const python = commandInterpreter(
      argv,
      spec.cwd,
      spec.pythonSource ? spec.python : undefined,
      spec.env.PATH ?? localPath,
    );
    if (!python) return { python: argv[0], chosenBy: rel, torchNeeded: true, missing: true };
    return { python, chosenBy: chosen ?? `what ${rel}'s ${argv[0]} runs`, torchNeeded: true };
  }
  if (chosen) return { python: spec.python, chosenBy: chosen, torchNeeded: true };
  if (PYTHON_WORD.test(path.posix.basename(argv[0])) && (!argv[0].includes('/') || argv[0].startsWith('/')))
    return { python: argv[0], chosenBy: `${rel}'s command`, torchNeeded: true };
  return {
    python: 'python3',
    chosenBy: `python3 on its PATH (${rel}'s ${argv[0]} may run another)`,
    torchNeeded: false,
  };
}

/** The oldest Python the companion (its supervisor, every run's owner) runs on: python/pyproject.toml. */
export const MIN_PYTHON = [3, 9] as const;

/** Whether a version ("2.7.18", "3.8.10") is older than MIN_PYTHON; false when it cannot be read. */
export function olderThanNeeded(version: string): boolean {
  const [major, minor] = version.split('.').map(Number);
  if (!Number.isInteger(major) || !Number.isInteger(minor)) return false;
  return major < MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor < MIN_PYTHON[1]);
}

/** Importing torch 2 takes seconds, many more on a loaded machine. */
const PROBE_TIMEOUT_MS = 120_000;

/** Runs `python -c PROBE` where asked: the report, or why it could not run. */
export async function probePython(python: string, where: PythonWhere): Promise<PythonReport | { error: string }> {
  let out: { code: number; stdout: string; stderr: string };
  try {
    out =
      where.host === 'local'
        ? await runLocal(python)
        : await runRemote(python, where.host, (where as { ssh: SshSettings }).ssh);
  } catch (e) {
    return { error: (e as Error).message.split('\n')[0] };
  }
  const line = out.stdout.split('\n').find((l) => l.startsWith('FSDP_PYTHON '));
  if (line) {
    try {
      return JSON.parse(line.slice('FSDP_PYTHON '.length)) as PythonReport;
    } catch {
      /* reported below */
    }
  }
  const said = out.stderr.trim().split('\n').pop() || `exited with status ${out.code}`;
  return { error: out.code === 127 ? `${python} not found` : said };
}

function runLocal(python: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(python, ['-c', PROBE], { timeout: PROBE_TIMEOUT_MS }, (err, stdout, stderr) => {
      const code = (err as NodeJS.ErrnoException | null)?.code;
      if (code === 'ENOENT') return resolve({ code: 127, stdout: '', stderr: '' });
      if (err && (err as { killed?: boolean }).killed)
        return reject(new Error(`${python} did not answer within ${PROBE_TIMEOUT_MS / 1000} s`));
      if (err && typeof code !== 'number' && !stdout) return reject(err);
      resolve({ code: typeof code === 'number' ? code : 0, stdout, stderr });
    });
  });
}

async function runRemote(
  python: string,
  host: string,
  ssh: SshSettings,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const word: RemoteWord = python.startsWith('~/') ? { path: python } : python;
  const r = await runSsh(host, [word, '-c', PROBE], ssh, { timeoutMs: PROBE_TIMEOUT_MS });
  if (r.code === 255) throw new Error(`ssh ${host} failed: ${r.stderr.trim().split('\n').pop() ?? 'no connection'}`);
  return { code: r.code, stdout: r.stdout.toString('utf8'), stderr: r.stderr };
}

/**
 * The two rows of the check: the Python (path, version, who chose it) and PyTorch in it (version,
 * CUDA or not). `chosenBy` says where the interpreter came from ("python3 on PATH", "the Python
 * extension's selection", "python: in gpt.fsdp-launch.yaml").
 */
export async function pythonChecks(
  python: string,
  where: PythonWhere,
  chosenBy: string,
  opts: { torchNeeded?: boolean } = {},
): Promise<PythonCheckRow[]> {
  const torchNeeded = opts.torchNeeded ?? true;
  const on = where.host === 'local' ? 'this machine' : where.host;
  const choose = "name a Python in the launch spec's python: key, or select one in the Python extension";
  const r = await probePython(python, where);
  if ('error' in r) {
    return [
      {
        name: `Python on ${on}`,
        ok: false,
        detail: `${python} (${chosenBy}): ${r.error}`,
        fix: `install Python 3 there, or ${choose}`,
      },
      { name: `PyTorch on ${on}`, ok: false, notRun: true, detail: 'no Python to ask' },
    ];
  }
  const interpreter = `${r.executable} (Python ${r.version})`;
  const rows: PythonCheckRow[] = [
    olderThanNeeded(r.version)
      ? {
          name: `Python on ${on}`,
          ok: false,
          detail: `${python} (${chosenBy}): FSDP Studio's supervisor needs Python >= ${MIN_PYTHON.join('.')}, found ${r.version} (${r.executable})`,
          fix: `install Python ${MIN_PYTHON.join('.')} or newer, or ${choose}`,
        }
      : { name: `Python on ${on}`, ok: true, detail: `${interpreter}, ${chosenBy}` },
  ];
  if (r.torch === undefined && !torchNeeded) {
    // No launch spec runs this Python: native runs need no torch; say so without failing the check.
    rows.push({
      name: `PyTorch on ${on}`,
      ok: true,
      detail: `none in ${interpreter} (${r.torchError ?? 'torch did not import'}); only your own PyTorch scripts need it: ${choose}`,
    });
  } else if (r.torch === undefined) {
    rows.push({
      name: `PyTorch on ${on}`,
      ok: false,
      detail: `${r.torchError ?? 'torch did not import'} — in ${interpreter}`,
      fix: `install it into that Python (${r.executable} -m pip install torch), or ${choose}`,
    });
  } else {
    const cuda = r.cuda
      ? `CUDA ${r.cudaVersion ?? ''} available, ${r.gpus ?? 0} GPU${r.gpus === 1 ? '' : 's'}`.replace('  ', ' ')
      : `CUDA not available (${r.cudaVersion ? `built for CUDA ${r.cudaVersion}, no GPU usable` : 'a CPU-only build'})`;
    rows.push({ name: `PyTorch on ${on}`, ok: true, detail: `torch ${r.torch}, ${cuda}` });
  }
  return rows;
}
