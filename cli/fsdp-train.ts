// `npx fsdp-train CONFIG [--nproc N] [--set key=value]... [--run-dir DIR] [--resume auto|never|PATH] [--from-hf DIR] [--plan]`:
// validates and resolves a run config, creates the run folder (runs/<run-id>/ with config.json), and
// runs the native trainer `fsdp-train-native` on it — by argument vector, never a shell — under the
// run's owner, the supervisor (python/fsdp_studio/supervise.py --native: this command runs again
// under it with --supervised), which writes run.json; forwards SIGINT/SIGTERM and exits with its
// exit code. With several ranks
// (launch.nproc_per_node x launch.nnodes, --nproc sets the first) it starts them with mpirun
// (runs/launch/mpirun.ts). The extension's launcher starts runs through this same command.
// `npx fsdp-train export CHECKPOINT|RUN_DIR --hf OUT_DIR` writes a checkpoint as a Hugging Face
// folder (GPT-2, Llama, Qwen3); `--from-hf DIR` (or model.from_hf) starts a run from one: its config.json gives the
// model keys (core/config/run-config-hf.ts), its weights the step-0 checkpoint (native/src/checkpoint/
// hf_gpt2.h, hf_decoder.h).
// `npx fsdp-train prepare --tokenizer DIR --out DIR INPUT...` turns a person's own text into token
// files with their model's tokenizer (cli/train/prepare-command.ts).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadRunConfig, type ResolvedRunConfig } from '../core/config/run-config';
import type { RunManifest } from '../core/protocol/run-manifest';
import { formatProblem } from '../core/config/schema-problems';
import { shownProblems } from '../core/config/shown-problems';
import {
  GRACEFUL_STOP_SIGNAL,
  LAUNCHER_ENV,
  launcherRank,
  mpirunArgv,
  runWorld,
  worldSizeOf,
} from '../runs/launch/mpirun';
import { latestRunOf, newRunId, readManifestFile } from '../runs/folder/run-folder';
import { manifestEnv } from '../runs/machines/detached-start';
import { RUN_MARK_ENV } from '../runs/stop/run-group';
import { nativeSupervisor, SUPERVISOR_PYTHON } from '../runs/launch/supervised-native';
import { supervisorPythonProblem } from '../runs/launch/launcher-check';
import { localLoginHost } from '../runs/machines/login-host';
import { COMPANION_DIR, supervisorPath } from '../runs/runtime/remote-companion';
import { killSession } from './train/job-processes';
import { rankCountProblem } from './train/rank-limits';
import { runFolderInUse } from '../runs/folder/run-folder-lock';
import { RefusedFile } from '../core/protocol/regular-file';
import { checkpointsDirOf, copyTokenizerFiles, exportSource, fromHfOf } from '../runs/folder/hf-export';
import { startingManifestFor, writeRunConfig } from './train/run-directory';
import { exitWhenFlushed } from './exit-when-flushed';
import { prepareCommand } from './train/prepare-command';
import { logitsCommand } from './train/logits-command';

const USAGE = `usage: fsdp-train CONFIG [--nproc N] [--oversubscribe] [--ranks-per-node N] [--set key=value]... [--run-dir DIR]
                  [--resume auto|never|CHECKPOINT] [--from-hf HF_DIR] [--no-memory-check] [--plan]
       fsdp-train --export-checkpoint CHECKPOINT OUT_DIR
       fsdp-train export CHECKPOINT|RUN_DIR --hf OUT_DIR [--config CONFIG]
       fsdp-train prepare --tokenizer DIR|tokenizer.json --out DIR INPUT...   (fsdp-train prepare --help)
       fsdp-train logits RUN|CHECKPOINT|HF_DIR [--config CONFIG] < TOKENS       (fsdp-train logits --help)

CONFIG is a run config (YAML or JSON). --set overrides a key (--set training.max_steps=100).
--nproc N: N ranks on this machine (launch.nproc_per_node), started with mpirun; with
launch.nnodes > 1 mpirun places them by your MPI host file. More ranks than this machine has cores
(GPUs for launch.device cuda) are refused unless --oversubscribe. --ranks-per-node N: HYBRID_SHARD's
shard groups (fsdp.ranks_per_node), to emulate nodes on one machine.
--run-dir: the run folder (default: <logging.runs_dir>/<name>-<time>-<id>/).
--resume auto: continue from the newest complete checkpoint of --run-dir (default: the latest
run of this config's name), with any number of ranks; it stops with an error when every
checkpoint there is unusable. --resume never: start over from step 0 (checkpoints already there
are set aside in checkpoints/previous-TIME/, never deleted). --resume CHECKPOINT: from that folder.
One trainer per run folder: a second one is refused with the first one's pid and host.
A run whose memory plan does not fit this machine (MemAvailable, the memory cgroup's limit, GPU
memory) is refused before it allocates; --no-memory-check (launch.check_memory: false) tries anyway.
--from-hf HF_DIR: start from a Hugging Face model folder (config.json + model.safetensors), as
model.from_hf in the config does: its config.json gives the model keys the config leaves out
(LlamaForCausalLM, MistralForCausalLM, Qwen3ForCausalLM, GPT2LMHeadModel; what the runtime cannot
train is refused by the key that says so), and its weights, held to the model (every difference is
named), are written first as the run's step-0 checkpoint; AdamW starts over. A resumed run
(--resume) of a config with model.from_hf continues from its checkpoint instead.
--plan: print the runtime's memory plan (bytes per rank, native/MEMORY.md) and exit.
--export-checkpoint: write a sharded checkpoint as one full checkpoint (OUT_DIR/step-N).
export --hf OUT_DIR: write a checkpoint (saved by any number of ranks; a run folder: its newest)
as a Hugging Face folder, config.json + model.safetensors (GPT2LMHeadModel, LlamaForCausalLM or
Qwen3ForCausalLM), that transformers loads with from_pretrained(OUT_DIR); the tokenizer's files of
the folder the run started from (model.from_hf) are copied beside them. The model is read from the run's config.json, or CONFIG.
Under mpirun or srun (started by you) each rank runs this command; give --run-dir.
Ctrl-C (or SIGTERM, the editor's Stop) stops after the current step and saves a checkpoint. A second
Ctrl-C aborts; a second SIGTERM (two Stops at once) is the same stop: the checkpoint is still saved.
SIGKILL to the run's process group aborts without one (Stop's "kill now").
Exit codes: 0 completed, 1 failed, 2 bad arguments or config, 128+N stopped by signal N.`;

const EXIT_CONFIG = 2;

/** The native trainer built by `npm install` (scripts/setup/native.mjs), relative to this bundle. */
export function nativeTrainerPath(): string {
  return (
    process.env.FSDP_TRAIN_NATIVE ??
    path.resolve(__dirname, '..', '..', 'native', 'build', 'Release', 'fsdp-train-native')
  );
}

export async function main(argv: string[]): Promise<number> {
  if (argv[0] === 'prepare') return prepareCommand(argv.slice(1));
  if (argv[0] === 'logits') return logitsCommand(argv.slice(1), nativeTrainerPath());
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
        oversubscribe: { type: 'boolean' },
        'no-memory-check': { type: 'boolean' },
        'export-checkpoint': { type: 'boolean' },
        'from-hf': { type: 'string' },
        hf: { type: 'string' },
        config: { type: 'string' },
        supervised: { type: 'boolean' },
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
  if (args.positionals[0] === 'export')
    return exportHf(native, args.positionals.slice(1), args.values.hf, args.values.config);
  if (args.values.hf !== undefined || args.values.config !== undefined) {
    console.error(`fsdp-train: --hf and --config belong to \`fsdp-train export\`\n${USAGE}`);
    return EXIT_CONFIG;
  }
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
  for (const [flag, key] of [
    ['nproc', 'launch.nproc_per_node'],
    ['ranks-per-node', 'fsdp.ranks_per_node'],
  ] as const) {
    const value = args.values[flag];
    if (value === undefined) continue;
    if (!/^[1-9]\d*$/.test(value)) {
      console.error(`fsdp-train: --${flag} ${JSON.stringify(value)}: expected a positive whole number`);
      return EXIT_CONFIG;
    }
    overrides.push(`${key}=${value}`);
  }
  if (args.values.oversubscribe) overrides.push('launch.oversubscribe=true');
  if (args.values['no-memory-check']) overrides.push('launch.check_memory=false');
  const configPath = path.resolve(args.positionals[0]);
  let text: string;
  try {
    text = readFileSync(configPath, 'utf8');
  } catch (e) {
    console.error(
      `fsdp-train: ${configPath}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}`,
    );
    return EXIT_CONFIG;
  }
  const shown = path.relative(process.cwd(), configPath) || configPath;
  const fromHfFlag = args.values['from-hf'];
  const loaded = loadRunConfig(text, configPath, overrides, {
    ...(fromHfFlag !== undefined ? { fromHf: path.resolve(fromHfFlag) } : {}),
  });
  for (const p of shownProblems(loaded.problems)) console.error(formatProblem(shown, p));
  if (!loaded.config) return EXIT_CONFIG;
  const config = loaded.config;

  if (!existsSync(native)) return missingRuntime(native);
  if (args.values.plan) return runNative(native, ['--plan', '-'], { stdin: JSON.stringify(config) });

  // Started as one rank of a job by mpirun or srun: rank 0 prepares the folder, every rank trains.
  const rank = launcherRank(process.env);
  if (rank !== undefined && !args.values['run-dir']) {
    console.error(
      'fsdp-train: started by mpirun or srun: give --run-dir, so that every rank writes to the same run folder',
    );
    return EXIT_CONFIG;
  }

  if (rank === undefined) {
    const tooMany = rankCountProblem(config, native);
    if (tooMany) {
      console.error(`fsdp-train: ${tooMany}`);
      return EXIT_CONFIG;
    }
  }

  const resume = args.values.resume;
  if (fromHfFlag !== undefined && resume !== undefined) {
    console.error('fsdp-train: --from-hf starts a new run: not with --resume');
    return EXIT_CONFIG;
  }
  // The folder's weights start a new run (model.from_hf of a resumed run gave only its keys).
  const fromHf = resume === undefined || resume === 'never' ? config.model.from_hf : undefined;
  if (fromHf !== undefined && rank !== undefined) {
    console.error(
      `fsdp-train: ${fromHfFlag !== undefined ? '--from-hf' : 'model.from_hf'} starts a new run from the folder's weights: run it as one command (it starts the ranks), not under mpirun or srun, or --resume its run`,
    );
    return EXIT_CONFIG;
  }
  const runsDir = config.logging.runs_dir!;
  let runDir = args.values['run-dir'] ? path.resolve(args.values['run-dir']) : undefined;
  let configFile: string | undefined;
  const supervised = args.values.supervised === true;
  try {
    if (!runDir && resume === 'auto') runDir = latestRunOf(runsDir, config.name ?? 'run');
    runDir ??= path.join(runsDir, newRunId(config.name ?? 'run'));
    if (rank === undefined || rank === 0) {
      if (!supervised) {
        // The supervisor this command runs again under needs Python >= 3.9: asked before the folder is made.
        const oldPython = await supervisorPythonProblem(localLoginHost(), SUPERVISOR_PYTHON);
        if (oldPython) {
          console.error(`fsdp-train: ${oldPython}`);
          return 1;
        }
      }
      mkdirSync(runDir, { recursive: true });
      // Before anything is written into it: one trainer per run folder (runs/folder/run-folder-lock.ts).
      // Under its supervisor the lock is the supervisor's already, held for the whole attempt
      // (native/src/run_folder/run_folder_lock.h): only a command that is not supervised yet looks.
      const busy = supervised ? undefined : runFolderInUse(native, runDir);
      if (busy) {
        console.error(`fsdp-train: ${busy}`);
        return 1;
      }
      if (!supervised) {
        // The run's owner, which writes run.json, is the supervisor: this command runs again under it.
        const manifest = startingManifestFor(runDir, config, {
          configPath,
          command: [process.execPath, ...process.argv.slice(1)],
        });
        // execArgv: the same Node options (tsx, when run from the sources).
        return await runUnderSupervisor(runDir, manifest, [...process.execArgv, process.argv[1], ...argv]);
      }
      configFile = writeRunConfig(runDir, config);
    }
  } catch (e) {
    console.error(
      `fsdp-train: ${runFolderProblem(e as NodeJS.ErrnoException, runDir, args.values['run-dir'] ? '--run-dir' : 'logging.runs_dir')}`,
    );
    return EXIT_CONFIG;
  }
  let resumeArgs = resume ? ['--resume', resume === 'auto' || resume === 'never' ? resume : path.resolve(resume)] : [];
  if (fromHf !== undefined) {
    // The folder's weights become the run's step-0 checkpoint, which the ranks load as a resume does (on any number of them).
    const checkpoints = checkpointsDirOf(runDir, config);
    const imported = await runNative(native, ['--import-hf', configFile!, fromHf, checkpoints], {
      quiet: true,
    });
    if (imported !== 0) {
      runEnded(`the Hugging Face folder ${fromHf} could not be imported`);
      return imported;
    }
    console.error(`fsdp-train: starting from the Hugging Face model in ${fromHf}`);
    resumeArgs = ['--resume', path.join(checkpoints, 'step-00000000')];
  }

  if (rank !== undefined) {
    // The other ranks may start before rank 0 has written config.json: each hands its own copy.
    const code = await runNative(native, ['--config', '-', '--run-dir', runDir, ...resumeArgs], {
      stdin: JSON.stringify(config),
    });
    if (rank === 0 && code !== 0) runEnded(exitReason(code));
    return code;
  }

  console.error(`fsdp-train: run ${path.basename(runDir)} in ${runDir}`);
  const nativeArgs = [native, '--config', configFile!, '--run-dir', runDir, ...resumeArgs];
  // The trainer watches this process (FSDP_LAUNCHER_PID) and ends the run, saying so in run.json,
  // if it is killed outright (as mpirun's ranks do in runJob).
  const code =
    worldSizeOf(runWorld(config)) > 1
      ? await runJob(config, nativeArgs)
      : await runNative(nativeArgs[0], nativeArgs.slice(1), { watched: true });
  // A run that ended without saying so itself: the supervisor ends it in run.json with this reason
  // (it is ignored when the runtime wrote its own end).
  if (code !== 0) runEnded(exitReason(code));
  return code;
}

/** The last line of a run whose runtime ended without its end: the supervisor's reason for run.json (supervise.py CLI_REASON). */
function runEnded(reason: string): void {
  console.error(`fsdp-train: the run ended: ${reason}`);
}

/** The companion (python/ with fsdp_studio) of this checkout or installation: beside dist/ (the bundle) or cli/ (the sources). */
function companionRoot(): string {
  const candidates = [path.resolve(__dirname, '..', '..', COMPANION_DIR), path.resolve(__dirname, '..', COMPANION_DIR)];
  return candidates.find((dir) => existsSync(supervisorPath(dir))) ?? candidates[0];
}

/**
 * Runs this command again (`argv`, with --supervised) under the run's owner, the supervisor
 * (python/fsdp_studio/supervise.py --native), which writes `manifest` as run.json and keeps it; its
 * exit code is this command's. The supervisor leads a process group of its own, so that a
 * terminal's Ctrl-C reaches this process only: every SIGINT, SIGTERM and SIGHUP is passed on to that
 * group once (the first stops after the step; what a second does fsdp-train under it decides:
 * abortsWhileStopping). If this process is killed outright, the supervisor ends the run (--with-parent).
 */
function runUnderSupervisor(runDir: string, manifest: RunManifest, argv: string[]): Promise<number> {
  const words = [
    ...nativeSupervisor(companionRoot(), runDir, { withParent: true }),
    process.execPath,
    ...argv,
    '--run-dir',
    runDir,
    '--supervised',
  ];
  return new Promise((resolve) => {
    const child = spawn(words[0], words.slice(1), {
      stdio: 'inherit',
      detached: true,
      env: { ...process.env, ...manifestEnv(manifest), [RUN_MARK_ENV]: manifest.run_id },
    });
    const onStop = (signal: NodeJS.Signals) => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, signal);
      } catch {
        // already ended
      }
    };
    process.on('SIGINT', onStop);
    process.on('SIGTERM', onStop);
    process.on('SIGHUP', onStop);
    child.on('error', (e) => {
      console.error(
        `fsdp-train: cannot start the run's supervisor with ${SUPERVISOR_PYTHON} (a Python 3 on PATH is needed): ${e.message}`,
      );
      resolve(1);
    });
    child.on('exit', (code, signal) => {
      process.off('SIGINT', onStop);
      process.off('SIGTERM', onStop);
      process.off('SIGHUP', onStop);
      const status = code ?? 128 + (signal ? os.constants.signals[signal] : 0);
      if (status !== 0) tellRecordedEnd(runDir);
      resolve(status);
    });
  });
}

/**
 * The last line of a run that did not complete: its end as run.json records it, whoever wrote it.
 * The runtime's own line saying why (a rank gone, a full disk) comes through mpirun, which drops a
 * rank's last output when it aborts the job at the same moment; the record is the run's word.
 * Nothing is said while run.json still says the run lives (its supervisor's guard ends it later).
 */
function tellRecordedEnd(runDir: string): void {
  let manifest: RunManifest | undefined;
  try {
    manifest = readManifestFile(runDir);
  } catch {
    return; // unreadable: the lines above are all there is to say
  }
  if (!manifest?.end_reason || manifest.status === 'starting' || manifest.status === 'running') return;
  console.error(`fsdp-train: run ${path.basename(runDir)} ${manifest.status}: ${manifest.end_reason}`);
}

/** `fsdp-train export CHECKPOINT|RUN_DIR --hf OUT_DIR [--config CONFIG]`. */
async function exportHf(
  native: string,
  positionals: string[],
  outDir: string | undefined,
  configPath: string | undefined,
): Promise<number> {
  if (positionals.length !== 1 || !outDir) {
    console.error(`fsdp-train export: give one checkpoint or run folder and --hf OUT_DIR\n${USAGE}`);
    return EXIT_CONFIG;
  }
  let source;
  let stdin: string | undefined;
  let fromHf: string | undefined;
  try {
    source = exportSource(positionals[0], configPath);
    if (configPath) {
      // A config as people write it (YAML or JSON, defaults left out): the runtime reads it resolved.
      const loaded = loadRunConfig(readFileSync(source.configFile, 'utf8'), source.configFile);
      for (const p of shownProblems(loaded.problems)) console.error(formatProblem(configPath, p));
      if (!loaded.config) return EXIT_CONFIG;
      stdin = JSON.stringify(loaded.config);
      fromHf = loaded.config.model.from_hf;
    } else {
      fromHf = fromHfOf(source.configFile);
    }
  } catch (e) {
    console.error(`fsdp-train export: ${(e as Error).message}`);
    return EXIT_CONFIG;
  }
  if (!existsSync(native)) return missingRuntime(native);
  const out = path.resolve(outDir);
  const code = await runNative(
    native,
    ['--export-hf', stdin === undefined ? source.configFile : '-', source.checkpoint, out],
    { stdin, quiet: true },
  );
  if (code !== 0) return code;
  let files: string[];
  let architecture: unknown;
  try {
    files = ['config.json', 'model.safetensors', ...copyTokenizerFiles(fromHf, out)];
    architecture = (JSON.parse(readFileSync(path.join(out, 'config.json'), 'utf8')) as { architectures?: unknown[] })
      .architectures?.[0];
  } catch (e) {
    console.error(`fsdp-train export: ${(e as Error).message}`);
    return 1;
  }
  const what = architecture === 'GPT2LMHeadModel' ? 'GPT-2 model' : `${String(architecture)} model`;
  console.log(`fsdp-train: ${source.checkpoint} written as a Hugging Face ${what} in ${out} (${files.join(', ')})`);
  return code;
}

function exitReason(code: number): string {
  if (abortedBy) return `aborted by a second ${abortedBy}`;
  if (launcherKilled) return launcherKilled;
  if (code > 128) return `the runtime ended by signal ${code - 128}`;
  if (code === EXIT_CONFIG) return `the runtime refused the config before the first step (exit ${code})`;
  if (code === 1) return 'the job ended with a failure before the runtime said why';
  return `the runtime exited with status ${code}`;
}

/** Why the run folder cannot be made, naming the path and the setting that chose it. */
function runFolderProblem(e: NodeJS.ErrnoException, runDir: string | undefined, setting: string): string {
  if (e instanceof RefusedFile) return e.message; // a file of the folder that is not a regular file, by name
  const where = e.path ?? runDir ?? '';
  const why =
    e.code === 'ENOTDIR' || e.code === 'EEXIST'
      ? 'a file is in the way where a folder must be'
      : e.code === 'EACCES' || e.code === 'EPERM'
        ? 'permission denied'
        : e.code === 'ENOSPC'
          ? 'the disk is full'
          : e.message;
  return `cannot create the run folder ${runDir ?? ''} (${setting}): ${where}: ${why}${e.code ? ` (${e.code})` : ''}`;
}

function missingRuntime(native: string): number {
  console.error(
    `fsdp-train: ${native} is missing: build the runtime with npm install (or node scripts/setup/native.mjs)`,
  );
  return 1;
}

/** OpenMP threads that spin while idle slow the run down on few shared cores (native/src/cli/main.cc). */
function runtimeEnv(): NodeJS.ProcessEnv {
  return { ...process.env, OMP_WAIT_POLICY: process.env.OMP_WAIT_POLICY ?? 'passive' };
}

/** What tells the trainer who launched it (native/src/cli/main.cc, launcher_pid): this process. */
function launcherEnv(): Record<(typeof LAUNCHER_ENV)[number], string> {
  return {
    FSDP_LAUNCHER_PID: String(process.pid),
    FSDP_LAUNCHER_HOST: os.hostname(),
    FSDP_LAUNCHER_NAME: 'fsdp-train',
  };
}

/** The signal that aborted the run (a second SIGINT), for run.json's reason. */
let abortedBy: NodeJS.Signals | undefined;

/** mpirun killed by a signal no stop sent (kill -9, the OOM killer): what the run's reason names, not the ranks it took along. */
let launcherKilled: string | undefined;

/**
 * A stop signal while the run is already stopping: a second Ctrl-C (SIGINT) is a person at the
 * terminal who will not wait, and aborts (true). A second SIGTERM is what two Stops at once send
 * (two editors, a double click): the run keeps stopping and saves its checkpoint (false) — only
 * Stop's explicit "kill now" (SIGKILL to the group, runs/stop/stop-run.ts) ends it without one.
 */
function abortsWhileStopping(signal: NodeJS.Signals, first: NodeJS.Signals): boolean {
  if (signal === 'SIGINT') return true;
  console.error(`fsdp-train: ${signal}: already stopping after ${first} (the checkpoint is being saved)`);
  return false;
}

/** What a second signal would do, said with the first. */
function abortHint(first: NodeJS.Signals): string {
  return first === 'SIGINT' ? 'again to abort' : 'Ctrl-C to abort; another SIGTERM is the same stop';
}

/**
 * Runs the native binary with inherited output; resolves to its exit code (128 + N for signal N).
 * The first SIGINT or SIGTERM is passed on (the runtime stops after the step and saves a
 * checkpoint); a second Ctrl-C aborts it at once, a second SIGTERM does not (abortsWhileStopping).
 * A terminal's Ctrl-C also reaches the runtime itself (same process group), which takes any number
 * of stops as one.
 */
function runNative(
  native: string,
  argv: string[],
  opts: { stdin?: string; watched?: boolean; quiet?: boolean } = {},
): Promise<number> {
  return new Promise((resolve) => {
    const env = opts.watched ? { ...runtimeEnv(), ...launcherEnv() } : runtimeEnv();
    const child = spawn(native, argv, {
      stdio: [opts.stdin === undefined ? 'ignore' : 'pipe', opts.quiet ? 'ignore' : 'inherit', 'inherit'],
      env,
    });
    if (opts.stdin !== undefined) child.stdin!.end(opts.stdin);
    let stopSignal: NodeJS.Signals | undefined;
    const onStop = (signal: NodeJS.Signals) => {
      if (!stopSignal) {
        stopSignal = signal;
        console.error(`fsdp-train: ${signal}: stopping after the current step (${abortHint(signal)})`);
        child.kill(signal);
      } else if (abortsWhileStopping(signal, stopSignal)) {
        abortedBy = signal;
        console.error(`fsdp-train: ${signal} again: aborting`);
        child.kill('SIGKILL');
      }
    };
    process.on('SIGINT', onStop);
    process.on('SIGTERM', onStop);
    child.on('error', (e) => {
      console.error(`fsdp-train: cannot start ${native}: ${e.message}`);
      resolve(1);
    });
    child.on('exit', (code, signal) => {
      process.off('SIGINT', onStop);
      process.off('SIGTERM', onStop);
      if (abortedBy && signal === 'SIGKILL') resolve(128 + os.constants.signals[abortedBy]);
      else resolve(code ?? 128 + (signal ? os.constants.signals[signal] : 0));
    });
  });
}

/**
 * The ranks through mpirun. mpirun gets a process group of its own, so that a signal to ours (a
 * terminal's Ctrl-C, the editor's Stop) reaches this process only: the first one is passed on as
 * the graceful stop (SIGUSR1, which mpirun forwards to every rank); a second Ctrl-C aborts the job.
 * The ranks watch this process (FSDP_LAUNCHER_PID) and end the job if it is killed outright.
 */
function runJob(config: ResolvedRunConfig, nativeArgv: string[]): Promise<number> {
  const env = { ...runtimeEnv(), ...launcherEnv() };
  const argv = mpirunArgv(runWorld(config), nativeArgv, {
    asRoot: process.getuid?.() === 0,
    exported: ['OMP_WAIT_POLICY', ...LAUNCHER_ENV],
  });
  return new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'inherit', 'inherit'], env, detached: true });
    let stopSignal: NodeJS.Signals | undefined;
    const onStop = (signal: NodeJS.Signals) => {
      if (!stopSignal) {
        stopSignal = signal;
        console.error(`fsdp-train: ${signal}: stopping after the current step (${abortHint(signal)})`);
        child.kill(GRACEFUL_STOP_SIGNAL);
      } else if (abortsWhileStopping(signal, stopSignal)) {
        // Aborted: every process of mpirun's session, ranks included (each has its own group).
        abortedBy = signal;
        console.error(`fsdp-train: ${signal} again: aborting the job`);
        if (child.pid !== undefined) killSession(child.pid);
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
      if (signal && !stopSignal)
        launcherKilled = `mpirun (pid ${child.pid}, the job's launcher) was killed by ${signal}`;
      // Ranks left behind by an mpirun that ended (killed, or failed before it could end them).
      if (child.pid !== undefined) killSession(child.pid);
      // The ranks report the forwarded SIGUSR1; say the signal that was sent to the run.
      if (abortedBy) resolve(128 + os.constants.signals[abortedBy]);
      else resolve(stopSignal && status > 128 ? 128 + os.constants.signals[stopSignal] : status);
    });
  });
}

if (require.main === module) void main(process.argv.slice(2)).then(exitWhenFlushed);
