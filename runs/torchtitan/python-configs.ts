// Runs the companion's probe of torchtitan 0.3 configurations (python/fsdp_studio/torchtitan_configs.py)
// in the Python the workspace selects, and reads its JSON. Which Python follows the launch specs'
// rules for this machine: the Python extension's selection, else the `python:` of a launch spec
// beside the file (then at the workspace's root), else python3 on the PATH. The probe runs the
// person's code: callers run it only in a trusted workspace.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { loadLaunchSpec } from '../../core/config/launch-spec';
import type { ProbeAnswer } from '../../core/memory/inputs/from-torchtitan-python';

/** The probe inside the companion (python/ of the installation). */
export function probeScript(extensionRoot: string): string {
  return path.join(extensionRoot, 'python', 'fsdp_studio', 'torchtitan_configs.py');
}

/** Importing torchtitan and calling a file's configs takes seconds; a hung import must not hold the lens forever. */
const PROBE_TIMEOUT_MS = 180_000;

export interface ChosenPython {
  python: string;
  /** In words, for the lens's tooltip: "the Python extension's selection", "python: in job.fsdp-launch.yaml". */
  chosenBy: string;
}

/** The interpreter for a config file: `selected` (the Python extension's), else a launch spec's python:, else python3. */
export function pythonForConfig(file: string, selected: string | undefined, workspaceRoot?: string): ChosenPython {
  if (selected) return { python: selected, chosenBy: "the Python extension's selection" };
  const folders = [path.dirname(file), ...(workspaceRoot ? [workspaceRoot] : [])];
  for (const folder of folders) {
    for (const spec of launchSpecsIn(folder)) {
      const loaded = loadLaunchSpec(readFileSync(spec, 'utf8'), spec).spec;
      if (loaded?.pythonSource === 'launch spec' && loaded.target === 'local')
        return { python: loaded.python, chosenBy: `python: in ${path.basename(spec)}` };
    }
  }
  return { python: 'python3', chosenBy: 'python3 on the PATH (no Python selected, no launch spec names one)' };
}

function launchSpecsIn(folder: string): string[] {
  if (!existsSync(folder)) return [];
  return readdirSync(folder)
    .filter((n) => /\.fsdp-launch\.ya?ml$/.test(n))
    .sort()
    .map((n) => path.join(folder, n));
}

/** The probe's answer for `file`, or why there is none (the interpreter missing, the probe failing). */
export function probeTorchtitanConfigs(
  python: string,
  script: string,
  file: string,
): Promise<ProbeAnswer | { error: string }> {
  return new Promise((resolve) => {
    execFile(
      python,
      [script, file],
      { cwd: path.dirname(file), timeout: PROBE_TIMEOUT_MS, maxBuffer: 16 << 20 },
      (err, stdout, stderr) => {
        const line = stdout.trim().split('\n').pop() ?? '';
        if (line.startsWith('{')) {
          try {
            return resolve(JSON.parse(line) as ProbeAnswer);
          } catch {
            // falls through to the error below
          }
        }
        const code = (err as NodeJS.ErrnoException | null)?.code;
        if (code === 'ENOENT') return resolve({ error: `${python} not found` });
        if (err?.killed) return resolve({ error: `${python} did not answer within ${PROBE_TIMEOUT_MS / 1000} s` });
        const said = stderr.trim().split('\n').slice(-1)[0] ?? err?.message ?? 'no output';
        resolve({ error: `${python} ${path.basename(script)}: ${said}` });
      },
    );
  });
}
