// `npx fsdp-train CONFIG [--nproc N] [--set key=value]... [--run-dir DIR] [--resume auto|PATH] [--plan]`:
// validates and resolves a run config, creates the run folder (runs/<run-id>/ with config.json and
// run.json), and runs the native trainer `fsdp-train-native` on it — by argument vector, never a
// shell — forwarding SIGINT/SIGTERM and exiting with its exit code. With several ranks
// (launch.nproc_per_node x launch.nnodes, --nproc sets the first) it starts them with mpirun
// (core/launch/mpirun.ts). The extension's launcher starts runs through this same command.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadRunConfig, type ResolvedRunConfig } from '../core/config/run-config';
import { formatProblem } from '../core/config/schema-problems';
import { shownProblems } from '../core/config/shown-problems';
import { GRACEFUL_STOP_SIGNAL, launcherRank, mpirunArgv, runWorld, worldSizeOf } from '../core/launch/mpirun';
import { latestRunOf, markEndedWithoutRunEnd, newRunId } from '../core/launch/run-folder';
import { prepareRunDirectory } from './train/run-directory';

const USAGE = `usage: fsdp-train CONFIG [--nproc N] [--ranks-per-node N] [--set key=value]... [--run-dir DIR]
                  [--resume auto|CHECKPOINT] [--plan]
       fsdp-train --export-checkpoint CHECKPOINT OUT_DIR

CONFIG is a run config (YAML or JSON). --set overrides a key (--set training.max_steps=100).
--nproc N: N ranks on this machine (launch.nproc_per_node), started with mpirun; with
launch.nnodes > 1 mpirun places them by your MPI host file. --ranks-per-node N: HYBRID_SHARD's
shard groups (fsdp.ranks_per_node), to emulate nodes on one machine.
--run-dir: the run folder (default: <logging.runs_dir>/<name>-<time>-<id>/).
--resume auto: continue from the newest complete checkpoint of --run-dir (default: the latest
run of this config's name), with any number of ranks; --resume CHECKPOINT: from that folder.
--plan: print the runtime's memory plan (bytes per rank, native/MEMORY.md) and exit.
--export-checkpoint: write a sharded checkpoint as one full checkpoint (OUT_DIR/step-N).
Under mpirun or srun (started by you) each rank runs this command; give --run-dir.
Ctrl-C (or SIGTERM) stops after the current step and saves a checkpoint; a second one aborts.
Exit codes: 0 completed, 1 failed, 2 bad arguments or config, 128+N stopped by signal N.`;

const EXIT_CONFIG = 2;

/** The native trainer built by `npm install` (scripts/setup/native.mjs), relative to this bundle. */
export function nativeTrainerPath(): string {
  return process.env.FSDP_TRAIN_NATIVE ?? path.resolve(__dirname, '..', '..', 'native', 'build', 'Release', 'fsdp-train-native');
}

export async function main(argv: string[]): Promise<number> {
  let args;
  try {
    args = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        set: { type: 'string', multiple: true },
        nproc: { type: 'string' },
        'ranks-per-node': { type: 'string' },
        'run-dir': { type: 'string' },
        resume: { type: 'string' },
        plan: { type: 'boolean' },
        'export-checkpoint': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (e) {
    console.error(`fsdp-train: ${(e as Error).message}\n${USAGE}`);
    return EXIT_CONFIG;
  }
  if (args.values.help) {
    console.log(USAGE);
    return 0;
  }
  const native = nativeTrainerPath();
  if (args.values['export-checkpoint']) {
    if (args.positionals.length !== 2) {
      console.error(USAGE);
      return EXIT_CONFIG;
    }
    if (!existsSync(native)) return missingRuntime(native);
    return runNative(native, ['--export-checkpoint', ...args.positionals.map((p) => path.resolve(p))]);
  }
  if (args.positionals.length !== 1) {
    console.error(USAGE);
    return EXIT_CONFIG;
  }
  const overrides = [...(args.values.set ?? [])];
  for (const [flag, key] of [['nproc', 'launch.nproc_per_node'], ['ranks-per-node', 'fsdp.ranks_per_node']] as const) {
    const value = args.values[flag];
    if (value === undefined) continue;
    if (!/^[1-9]\d*$/.test(value)) {
      console.error(`fsdp-train: --${flag} ${JSON.stringify(value)}: expected a positive whole number`);
      return EXIT_CONFIG;
    }
    overrides.push(`${key}=${value}`);
  }
  const configPath = path.resolve(args.positionals[0]);
  let text: string;
  try {
    text = readFileSync(configPath, 'utf8');
  } catch (e) {
    console.error(`fsdp-train: ${configPath}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}`);
    return EXIT_CONFIG;
  }
  const shown = path.relative(process.cwd(), configPath) || configPath;
  const loaded = loadRunConfig(text, configPath, overrides);
  for (const p of shownProblems(loaded.problems)) console.error(formatProblem(shown, p));
  if (!loaded.config) return EXIT_CONFIG;
  const config = loaded.config;

  if (!existsSync(native)) return missingRuntime(native);
  if (args.values.plan) return runNative(native, ['--plan', '-'], { stdin: JSON.stringify(config) });

  // Started as one rank of a job by mpirun or srun: rank 0 prepares the folder, every rank trains.
  const rank = launcherRank(process.env);
  if (rank !== undefined && !args.values['run-dir']) {
    console.error('fsdp-train: started by mpirun or srun: give --run-dir, so that every rank writes to the same run folder');
    return EXIT_CONFIG;
  }

  const resume = args.values.resume;
  let runDir = args.values['run-dir'] ? path.resolve(args.values['run-dir']) : undefined;
  if (!runDir && resume === 'auto') runDir = latestRunOf(config.logging.runs_dir!, config.name ?? 'run');
  runDir ??= path.join(config.logging.runs_dir!, newRunId(config.name ?? 'run'));
  const resumeArgs = resume ? ['--resume', resume === 'auto' ? 'auto' : path.resolve(resume)] : [];

  if (rank !== undefined) {
    if (rank === 0) prepareRunDirectory(runDir, config, { configPath, command: [process.execPath, ...process.argv.slice(1)] });
    // The other ranks may start before rank 0 has written config.json: each hands its own copy.
    return runNative(native, ['--config', '-', '--run-dir', runDir, ...resumeArgs], { stdin: JSON.stringify(config) });
  }

  const configFile = prepareRunDirectory(runDir, config, { configPath, command: [process.execPath, ...process.argv.slice(1)] });
  console.error(`fsdp-train: run ${path.basename(runDir)} in ${runDir}`);
  const nativeArgs = [native, '--config', configFile, '--run-dir', runDir, ...resumeArgs];
  const code = worldSizeOf(runWorld(config)) > 1 ? await runJob(config, nativeArgs) : await runNative(nativeArgs[0], nativeArgs.slice(1));
  // A run that ended without saying so itself is failed in run.json, with the exit that ended it
  // (a no-op when the runtime wrote its own end).
  if (code !== 0) markEndedWithoutRunEnd(runDir, exitReason(code));
  return code;
}

function exitReason(code: number): string {
  if (code > 128) return `the runtime ended by signal ${code - 128}`;
  if (code === EXIT_CONFIG) return `the runtime refused the config before the first step (exit ${code})`;
  if (code === 1) return 'the job ended with a failure before the runtime said why';
  return `the runtime exited with status ${code}`;
}

function missingRuntime(native: string): number {
  console.error(`fsdp-train: ${native} is missing: build the runtime with npm install (or node scripts/setup/native.mjs)`);
  return 1;
}

/** OpenMP threads that spin while idle slow the run down on few shared cores (native/src/cli/main.cc). */
function runtimeEnv(): NodeJS.ProcessEnv {
  return { ...process.env, OMP_WAIT_POLICY: process.env.OMP_WAIT_POLICY ?? 'passive' };
}

/** Runs the native binary with inherited output; resolves to its exit code (128 + N for signal N). */
function runNative(native: string, argv: string[], opts: { stdin?: string } = {}): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(native, argv, { stdio: [opts.stdin === undefined ? 'ignore' : 'pipe', 'inherit', 'inherit'], env: runtimeEnv() });
    if (opts.stdin !== undefined) child.stdin!.end(opts.stdin);
    const forward = (signal: NodeJS.Signals) => () => child.kill(signal);
    const onInt = forward('SIGINT');
    const onTerm = forward('SIGTERM');
    process.on('SIGINT', onInt);
    process.on('SIGTERM', onTerm);
    child.on('error', (e) => {
      console.error(`fsdp-train: cannot start ${native}: ${e.message}`);
      resolve(1);
    });
    child.on('exit', (code, signal) => {
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
      resolve(code ?? 128 + (signal ? os.constants.signals[signal] : 0));
    });
  });
}

/**
 * The ranks through mpirun. mpirun gets a process group of its own, so that a signal to ours (a
 * terminal's Ctrl-C, the editor's Stop) reaches this process only: the first one is passed on as
 * the graceful stop (SIGUSR1, which mpirun forwards to every rank), a second one aborts the job.
 * The ranks watch this process (FSDP_LAUNCHER_PID) and end the job if it is killed outright.
 */
function runJob(config: ResolvedRunConfig, nativeArgv: string[]): Promise<number> {
  const env = { ...runtimeEnv(), FSDP_LAUNCHER_PID: String(process.pid), FSDP_LAUNCHER_HOST: os.hostname() };
  const argv = mpirunArgv(runWorld(config), nativeArgv, { asRoot: process.getuid?.() === 0, exported: ['OMP_WAIT_POLICY', 'FSDP_LAUNCHER_PID', 'FSDP_LAUNCHER_HOST'] });
  return new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'inherit', 'inherit'], env, detached: true });
    let stopSignal: NodeJS.Signals | undefined;
    const onStop = (signal: NodeJS.Signals) => {
      if (!stopSignal) {
        stopSignal = signal;
        console.error(`fsdp-train: ${signal}: stopping after the current step (again to abort)`);
        child.kill(GRACEFUL_STOP_SIGNAL);
      } else {
        child.kill('SIGTERM');
      }
    };
    process.on('SIGINT', onStop);
    process.on('SIGTERM', onStop);
    child.on('error', (e) => {
      console.error(`fsdp-train: cannot start mpirun (install OpenMPI: apt-get install openmpi-bin): ${e.message}`);
      resolve(1);
    });
    child.on('exit', (code, signal) => {
      process.off('SIGINT', onStop);
      process.off('SIGTERM', onStop);
      const status = code ?? 128 + (signal ? os.constants.signals[signal] : 0);
      // The ranks report the forwarded SIGUSR1; say the signal that was sent to the run.
      resolve(stopSignal && status > 128 ? 128 + os.constants.signals[stopSignal] : status);
    });
  });
}

if (require.main === module) void main(process.argv.slice(2)).then((code) => process.exit(code));
