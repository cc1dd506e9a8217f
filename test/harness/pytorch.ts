// PyTorch 2 for tests of a person's own training: the project's Python environment (.venv at the
// repository root, made by the test set-up, scripts/setup/python-env.mjs: torch 2.13 CPU,
// transformers, accelerate, lightning, tensorboard, …), the test DDP script, and the companion's
// supervisor. Every PyTorch test runs this interpreter; Debian's python3-torch is not used.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { repoRoot } from '../../scripts/code-server';

/** The project's own Python environment (.venv, made by the test set-up): PyTorch 2.13 CPU, transformers, accelerate, lightning, … */
export const VENV_PYTHON = path.join(repoRoot, '.venv', 'bin', 'python');
export const SUPERVISOR = path.join(repoRoot, 'python', 'fsdp_studio', 'supervise.py');
export const DDP_SCRIPT = path.join(repoRoot, 'test', 'pytorch', 'ddp_train.py');

/**
 * A real Python without torch: a venv of Debian's python3 made without pip and without the system's
 * site-packages (where Debian's python3-torch lives), so `import torch` fails there with
 * "No module named 'torch'". Returns its bin/python3.
 */
export function pythonWithoutTorch(dir: string): string {
  execFileSync('/usr/bin/python3', ['-m', 'venv', '--without-pip', dir]);
  return path.join(dir, 'bin', 'python3');
}
