// "FSDP: Check environment": the checks people run by hand before a distributed job, as a
// checklist where every failure says how to fix it.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import os from 'node:os';
import { promisify } from 'node:util';
import * as vscode from 'vscode';
import { parse } from 'yaml';
import { mpirunArgv } from '../../runs/launch/mpirun';
import { checkHostAlias } from '../../core/remote/remote-command';
import { findRunConfigs } from '../run-configs';
import { runSsh } from '../../runs/machines/ssh';
import { callsPlaceholder } from '../../core/config/placeholder-host';
import type { BlasKernels, CpuGemm } from '../../core/protocol/blas-kernels';
import type { StudioContext } from '../studio-context';
import { pythonChecks, pythonInUse, type PythonInUse } from '../../runs/machines/python-check';
import { loadLaunchSpec, withSelectedPython } from '../../core/config/launch-spec';
import { selectedPython } from '../python-interpreter';
import { requireTrust } from './launch-run';

const execFileAsync = promisify(execFile);

export interface CheckResult {
  name: string;
  ok: boolean;
  detail: string;
  /** What to do about a failure. */
  fix?: string;
  /** Not run: it needs something this installation does not have yet, or does not apply here. */
  notRun?: boolean;
}

export function registerCheckEnvironment(studio: StudioContext): vscode.Disposable {
  return vscode.commands.registerCommand('fsdp.checkEnvironment', async () => {
    // The enablement in package.json hides the command; this refuses it when invoked by id, since
    // the checks run the Pythons the workspace's launch specs name and connect to its SSH hosts.
    if (!requireTrust("Checking the environment runs the launch specs' Pythons and connects to SSH hosts")) return;
    const results = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'FSDP: checking the environment…' },
      () => checkEnvironment(studio),
    );
    studio.output.info('Environment check:');
    for (const r of results) {
      const line = `${r.notRun ? '–' : r.ok ? '✓' : '✗'} ${r.name}: ${r.detail}${r.fix ? ` — fix: ${r.fix}` : ''}`;
      if (r.ok || r.notRun) studio.output.info(line);
      else studio.output.warn(line);
    }
    studio.output.show(true);
    const run = results.filter((r) => !r.notRun);
    const failed = run.filter((r) => !r.ok);
    const notRun = results.filter((r) => r.notRun);
    const skipped = notRun.length ? `; not run: ${notRun.map((r) => `${r.name}: ${r.detail}`).join('; ')}` : '';
    const summary = `Environment: ${run.length - failed.length} of ${run.length} checks passed`;
    if (failed.length)
      void vscode.window.showWarningMessage(
        `${summary}; ${failed.map((f) => f.name).join(', ')} failed${skipped} (details in the FSDP Studio output).`,
      );
    else void vscode.window.showInformationMessage(`${summary}${skipped}.`);
  });
}

export async function checkEnvironment(studio: StudioContext): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  const addon = studio.runtime.load();
  if (addon) {
    const probe = addon.probeDevices();
    const gib = (b: number) => (b / 2 ** 30).toFixed(1);
    results.push({
      name: 'Native runtime',
      ok: true,
      detail: `${probe.blas}; CUDA backend ${probe.cudaBuilt ? 'built' : 'not built'}`,
    });
    results.push({
      name: 'CPU',
      ok: true,
      detail: `${probe.cpu.logicalCores} cores (${probe.cpu.modelName}), ${gib(probe.cpu.memoryBytes)} GiB`,
    });
    results.push(
      probe.gpus.length
        ? {
            name: 'GPUs',
            ok: true,
            detail: probe.gpus.map((g) => `cuda:${g.index} ${g.name} ${gib(g.memoryBytes)} GiB`).join(', '),
          }
        : { name: 'GPUs', ok: true, detail: 'none found: runs use the CPU backend' },
    );
  } else {
    const fix = studio.localRuntime.fromCheckout
      ? 'run npm install in the extension folder (it builds native/ with cmake-js)'
      : 'run "FSDP: Build native runtime" (or launch a run: it is built on first use)';
    results.push({ name: 'Native runtime', ok: false, detail: studio.runtime.lastError() ?? 'not loaded', fix });
    results.push({
      name: 'CPU',
      ok: true,
      detail: `${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`,
    });
  }
  results.push(...(await runtimeProbeChecks(studio)));
  results.push(
    await toolCheck(
      'MPI (mpirun)',
      'mpirun',
      ['--version'],
      'install OpenMPI: sudo apt-get install openmpi-bin libopenmpi-dev',
    ),
  );
  results.push(await ncclCheck(addon?.probeDevices().gpus.length ?? 0));
  const pythons = await launchSpecPythons();
  results.push(...(await localPythonChecks(pythons.get('local') ?? [])));
  results.push(
    await toolCheck('OpenSSH client', 'ssh', ['-V'], 'install OpenSSH: sudo apt-get install openssh-client'),
  );
  const inUse = await sshHostsInUse();
  const hosts = new Set([...inUse.keys(), ...[...pythons.keys()].filter((t) => t !== 'local')]);
  for (const host of hosts) {
    // A sample's placeholder ("gpu-box") that nobody replaced yet: not set up, not a failure.
    const placeholder = inUse.get(host);
    if (placeholder && !pythons.has(host)) {
      results.push({
        name: `SSH to ${host}`,
        ok: false,
        notRun: true,
        detail: `not set up yet (placeholder in ${placeholder})`,
      });
      continue;
    }
    const reach = await sshCheck(studio, host);
    results.push(reach);
    if (!reach.ok) continue;
    // The Python the launch specs for this host run, else python3 on the host's PATH.
    for (const p of pythons.get(host) ?? [{ python: 'python3', chosenBy: 'python3 on its PATH', torchNeeded: false }]) {
      results.push(
        ...(await pythonChecks(p.python, { host, ssh: studio.runs.sshSettings() }, p.chosenBy, {
          torchNeeded: p.torchNeeded,
        })),
      );
    }
  }
  results.push(await allReduceCheck(studio));
  return results;
}

/**
 * The runtime's own collectives check (native/src/parallel/allreduce_check.h) on 2 ranks of this
 * machine, started as every local multi-rank run is (runs/launch/mpirun.ts): each rank contributes
 * values with known sums and every collective the strategies use is verified.
 */
async function allReduceCheck(studio: StudioContext): Promise<CheckResult> {
  const name = 'All-reduce across ranks';
  const cli = studio.runtime.cliPath;
  if (!existsSync(cli)) return { name, ok: false, notRun: true, detail: 'the native runtime is not built' };
  const argv = mpirunArgv({ nprocPerNode: 2, nnodes: 1 }, [cli, '--allreduce-check'], {
    asRoot: process.getuid?.() === 0,
  });
  const fix =
    'check that `mpirun -n 2 hostname` works in a terminal (Open MPI: sudo apt-get install openmpi-bin libopenmpi-dev)';
  try {
    const { stdout } = await execFileAsync(argv[0], argv.slice(1), { timeout: 60_000 });
    const r = JSON.parse(stdout.trim()) as {
      ok: boolean;
      world_size: number;
      elements: number;
      all_reduce_gbps: number;
      failures: string[];
    };
    if (!r.ok) return { name, ok: false, detail: r.failures.slice(0, 3).join('; '), fix };
    return {
      name,
      ok: true,
      detail: `${r.world_size} ranks: all-reduce, reduce-scatter, all-gather and broadcast of ${r.elements} floats correct (all-reduce ${r.all_reduce_gbps.toFixed(2)} GB/s)`,
    };
  } catch (e) {
    const err = e as Error & { stderr?: string };
    return { name, ok: false, detail: err.stderr?.trim().split('\n').pop() || err.message.split('\n')[0], fix };
  }
}

/** What the runtime's --probe says of the CPU's matrix products (native/src/cli/main.cc). */
interface RuntimeProbe {
  blas_kernels?: BlasKernels;
  cpu_gemm?: { float32: CpuGemm; bfloat16: CpuGemm };
}

/**
 * The rows read from the runtime's --probe, run once for them all: which OpenBLAS kernels runs use
 * and which GEMM the CPU backend's products run. Where the runtime is not built or its probe fails,
 * each row says so.
 */
async function runtimeProbeChecks(studio: StudioContext): Promise<CheckResult[]> {
  const names = ['BLAS kernels', 'CPU matrix products'];
  const cli = studio.runtime.cliPath;
  if (!existsSync(cli))
    return names.map((name) => ({ name, ok: false, notRun: true, detail: 'the native runtime is not built' }));
  let probe: RuntimeProbe;
  try {
    probe = JSON.parse((await execFileAsync(cli, ['--probe'], { timeout: 60_000 })).stdout) as RuntimeProbe;
  } catch (e) {
    const detail = `fsdp-train-native --probe failed: ${(e as Error).message.split('\n')[0]}`;
    return names.map((name) => ({
      name,
      ok: false,
      detail,
      fix: 'rebuild the runtime ("FSDP: Build native runtime")',
    }));
  }
  return [blasKernelsCheck(probe.blas_kernels), cpuGemmCheck(probe.cpu_gemm)];
}

const NOT_SAID = 'this build of the runtime does not say (rebuild it)';

/**
 * Which OpenBLAS kernels runs use, as the runtime's CLI chooses them at its start (from the CPU's
 * own features: native/src/runtime/blas_kernels.h), and whether that is a known-slow path.
 */
function blasKernelsCheck(k: BlasKernels | undefined): CheckResult {
  const name = 'BLAS kernels';
  if (!k) return { name, ok: false, notRun: true, detail: NOT_SAID };
  if (!k.slow) return { name, ok: true, detail: k.note };
  return {
    name,
    ok: false,
    detail: k.note,
    fix:
      k.set_by === 'environment'
        ? 'unset OPENBLAS_CORETYPE'
        : "install Debian's libopenblas0-openmp (an OpenBLAS built with DYNAMIC_ARCH)",
  };
}

/**
 * Which GEMM the CPU backend's products run: OpenBLAS in float32, and whether mixed_precision
 * param_dtype bfloat16 runs here on oneDNN's bf16 GEMM (and on which instructions), or why not.
 */
function cpuGemmCheck(g: RuntimeProbe['cpu_gemm']): CheckResult {
  const name = 'CPU matrix products';
  if (!g) return { name, ok: false, notRun: true, detail: NOT_SAID };
  const bf16 = g.bfloat16.bf16_available
    ? `bfloat16: ${g.bfloat16.note}`
    : `bfloat16 not available: ${g.bfloat16.bf16_refusal ?? 'no reason given'}`;
  // float32 always runs: a CPU without bf16 is not a problem, only said.
  return { name, ok: true, detail: `float32: ${g.float32.note}; ${bf16}` };
}

/** NCCL matters only with GPUs: found by the dynamic linker's cache, as the runtime would load it. */
async function ncclCheck(gpus: number): Promise<CheckResult> {
  if (gpus === 0) return { name: 'NCCL', ok: true, notRun: true, detail: 'no GPU here, so no NCCL needed' };
  try {
    const { stdout } = await execFileAsync('ldconfig', ['-p'], { timeout: 10_000, maxBuffer: 16 * 2 ** 20 });
    const lib = stdout.split('\n').find((l) => l.includes('libnccl.so'));
    if (lib) return { name: 'NCCL', ok: true, detail: lib.trim().split(' => ').pop() ?? 'found' };
  } catch {
    /* no ldconfig: reported as not found below */
  }
  return {
    name: 'NCCL',
    ok: false,
    detail: 'libnccl.so not found by the dynamic linker',
    fix: "install NCCL (e.g. the libnccl2 package from NVIDIA's CUDA repository) or add its lib folder to LD_LIBRARY_PATH",
  };
}

/** This machine's Pythons: those the local launch specs' commands run, else the one a spec would get (the Python extension's selection, or python3). */
async function localPythonChecks(inUse: PythonInUse[]): Promise<CheckResult[]> {
  const rows = async (p: PythonInUse): Promise<CheckResult[]> =>
    p.missing
      ? [
          {
            name: 'Python on this machine',
            ok: false,
            detail: `${p.python}, the command of ${p.chosenBy}, is not found (from its cwd and PATH)`,
            fix: "install it, or name the Python that has it in the launch spec's python: key",
          },
        ]
      : pythonChecks(p.python, { host: 'local' }, p.chosenBy, { torchNeeded: p.torchNeeded });
  // One at a time: each imports torch, seconds of CPU on a loaded machine.
  const out: CheckResult[] = [];
  for (const p of inUse) out.push(...(await rows(p)));
  if (inUse.length) return out;
  const selected = await selectedPython(vscode.extensions, vscode.workspace.workspaceFolders?.[0]?.uri);
  if ('path' in selected)
    return pythonChecks(selected.path, { host: 'local' }, "the Python extension's selection for the workspace", {
      torchNeeded: false,
    });
  return pythonChecks('python3', { host: 'local' }, `python3 on PATH (${selected.none})`, { torchNeeded: false });
}

/**
 * The Python each launch spec of the workspace runs, by target ("local" or an SSH host): on this
 * machine as the supervisor will find it (python:, the Python extension's selection, the command's
 * own first word or its #! line); on a host its python:, the command's own python, else python3.
 */
async function launchSpecPythons(): Promise<Map<string, PythonInUse[]>> {
  const byTarget = new Map<string, PythonInUse[]>();
  const add = (target: string, p: PythonInUse) => {
    const list = byTarget.get(target) ?? [];
    if (!list.some((q) => q.python === p.python)) list.push(p);
    byTarget.set(target, list);
  };
  const uris = await vscode.workspace.findFiles('**/*.fsdp-launch.{yaml,yml}', '{**/node_modules/**,**/.git/**}', 200);
  for (const uri of uris) {
    const rel = vscode.workspace.asRelativePath(uri);
    let loaded;
    try {
      loaded = loadLaunchSpec(Buffer.from(await vscode.workspace.fs.readFile(uri)).toString('utf8'), uri.fsPath).spec;
    } catch {
      continue; // an unreadable spec is the language server's business
    }
    if (!loaded || loaded.slurm) continue;
    const selected =
      loaded.pythonSource || loaded.target !== 'local' ? undefined : await selectedPython(vscode.extensions, uri);
    const spec = withSelectedPython(loaded, selected && 'path' in selected ? selected.path : undefined);
    add(spec.target, pythonInUse(spec, rel, process.env.PATH));
  }
  return byTarget;
}

/**
 * Hosts people mean to use: the fsdp.ssh.hosts setting and the launch targets of the workspace's run
 * configs, each with the config that calls it a placeholder (a sample's "gpu-box"), if only that names it.
 */
async function sshHostsInUse(): Promise<Map<string, string | undefined>> {
  const hosts = new Map<string, string | undefined>();
  for (const h of vscode.workspace.getConfiguration('fsdp.ssh').get<string[]>('hosts') ?? []) hosts.set(h, undefined);
  for (const uri of await findRunConfigs()) {
    try {
      const text = Buffer.from(await vscode.workspace.fs.readFile(uri)).toString('utf8');
      const target = (parse(text) as { launch?: { target?: unknown } })?.launch?.target;
      if (typeof target !== 'string' || target === 'local') continue;
      const placeholder = callsPlaceholder(text, target) ? vscode.workspace.asRelativePath(uri) : undefined;
      // Named for real anywhere (the setting, another config): checked.
      if (!hosts.has(target)) hosts.set(target, placeholder);
      else if (!placeholder) hosts.set(target, undefined);
    } catch {
      /* an unreadable config is the language server's business */
    }
  }
  return hosts;
}

async function sshCheck(studio: StudioContext, host: string): Promise<CheckResult> {
  const name = `SSH to ${host}`;
  const bad = checkHostAlias(host);
  if (bad) return { name, ok: false, detail: bad, fix: 'use a host alias from your ssh config' };
  const t0 = Date.now();
  try {
    const r = await runSsh(host, ['true'], studio.runs.sshSettings(), { timeoutMs: 30_000 });
    if (r.code === 0) return { name, ok: true, detail: `reachable in ${Date.now() - t0} ms` };
    return {
      name,
      ok: false,
      detail: r.stderr.split('\n').pop() || `ssh exited with ${r.code}`,
      fix: `check that \`ssh ${host} true\` works in a terminal without a password prompt (key in ssh-agent, host key in known_hosts)`,
    };
  } catch (e) {
    return { name, ok: false, detail: (e as Error).message, fix: 'install the OpenSSH client' };
  }
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
