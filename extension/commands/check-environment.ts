// "FSDP: Check environment": the checks people run by hand before a distributed job, as a
// checklist where every failure says how to fix it.
import { execFile } from 'node:child_process';
import os from 'node:os';
import { promisify } from 'node:util';
import * as vscode from 'vscode';
import type { StudioContext } from '../studio-context';

const execFileAsync = promisify(execFile);

export interface CheckResult {
  name: string;
  ok: boolean;
  detail: string;
  /** What to do about a failure. */
  fix?: string;
}

export function registerCheckEnvironment(studio: StudioContext): vscode.Disposable {
  return vscode.commands.registerCommand('fsdp.checkEnvironment', async () => {
    const results = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'FSDP: checking the environment…' },
      () => checkEnvironment(studio),
    );
    studio.output.info('Environment check:');
    for (const r of results) {
      const line = `${r.ok ? '✓' : '✗'} ${r.name}: ${r.detail}${r.fix ? ` — fix: ${r.fix}` : ''}`;
      if (r.ok) studio.output.info(line);
      else studio.output.warn(line);
    }
    studio.output.show(true);
    const failed = results.filter((r) => !r.ok);
    const summary = `Environment: ${results.length - failed.length} of ${results.length} checks passed`;
    if (failed.length) void vscode.window.showWarningMessage(`${summary}; ${failed.map((f) => f.name).join(', ')} failed (details in the FSDP Studio output).`);
    else void vscode.window.showInformationMessage(`${summary}.`);
  });
}

export async function checkEnvironment(studio: StudioContext): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  const addon = studio.runtime.load();
  if (addon) {
    const probe = addon.probeDevices();
    const gib = (b: number) => (b / 2 ** 30).toFixed(1);
    results.push({ name: 'Native runtime', ok: true, detail: `${probe.blas}; CUDA backend ${probe.cudaBuilt ? 'built' : 'not built'}` });
    results.push({ name: 'CPU', ok: true, detail: `${probe.cpu.logicalCores} cores (${probe.cpu.modelName}), ${gib(probe.cpu.memoryBytes)} GiB` });
    results.push(
      probe.gpus.length
        ? { name: 'GPUs', ok: true, detail: probe.gpus.map((g) => `cuda:${g.index} ${g.name} ${gib(g.memoryBytes)} GiB`).join(', ') }
        : { name: 'GPUs', ok: true, detail: 'none found: runs use the CPU backend' },
    );
  } else {
    results.push({ name: 'Native runtime', ok: false, detail: studio.runtime.lastError() ?? 'not loaded', fix: 'run npm install in the extension folder (it builds native/ with cmake-js)' });
    results.push({ name: 'CPU', ok: true, detail: `${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB` });
  }
  results.push(await toolCheck('MPI (mpirun)', 'mpirun', ['--version'], 'install OpenMPI: sudo apt-get install openmpi-bin libopenmpi-dev'));
  results.push(await toolCheck('OpenSSH client', 'ssh', ['-V'], 'install OpenSSH: sudo apt-get install openssh-client'));
  return results;
}

async function toolCheck(name: string, command: string, args: string[], fix: string): Promise<CheckResult> {
  try {
    const { stdout, stderr } = await execFileAsync(command, args, { timeout: 10_000 });
    const first = `${stdout}${stderr}`.split('\n').find((l) => l.trim()) ?? 'present';
    return { name, ok: true, detail: first.trim() };
  } catch (e) {
    return { name, ok: false, detail: `${command} not found or failed: ${(e as Error).message.split('\n')[0]}`, fix };
  }
}
