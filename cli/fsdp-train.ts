// `npx fsdp-train CONFIG [--set key=value]... [--run-dir DIR] [--resume auto|PATH] [--plan]`:
// validates and resolves a run config, creates the run folder (runs/<run-id>/ with config.json and
// run.json), and runs the native trainer `fsdp-train-native` on it — by argument vector, never a
// shell — forwarding SIGINT/SIGTERM and exiting with its exit code. The extension's launcher
// starts runs through this same command.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadRunConfig } from '../core/config/run-config';
import { formatProblem } from '../core/config/schema-problems';
import { latestRunOf, markEndedWithoutRunEnd, newRunId, prepareRunDirectory } from './train/run-directory';

const USAGE = `usage: fsdp-train CONFIG [--set key=value]... [--run-dir DIR] [--resume auto|CHECKPOINT] [--plan]

CONFIG is a run config (YAML or JSON). --set overrides a key (--set training.max_steps=100).
--run-dir: the run folder (default: <logging.runs_dir>/<name>-<time>-<id>/).
--resume auto: continue from the newest complete checkpoint of --run-dir (default: the latest
run of this config's name); --resume CHECKPOINT: from that checkpoint folder.
--plan: print the runtime's memory plan (bytes per rank, native/MEMORY.md) and exit.
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
        'run-dir': { type: 'string' },
        resume: { type: 'string' },
        plan: { type: 'boolean' },
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
  if (args.positionals.length !== 1) {
    console.error(USAGE);
    return EXIT_CONFIG;
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
  const loaded = loadRunConfig(text, configPath, args.values.set ?? []);
  for (const p of loaded.problems) console.error(formatProblem(shown, p));
  if (!loaded.config) return EXIT_CONFIG;
  const config = loaded.config;

  const native = nativeTrainerPath();
  if (!existsSync(native)) {
    console.error(`fsdp-train: ${native} is missing: build the runtime with npm install (or node scripts/setup/native.mjs)`);
    return 1;
  }
  if (args.values.plan) return runNative(native, ['--plan', '-'], JSON.stringify(config));

  const resume = args.values.resume;
  let runDir = args.values['run-dir'] ? path.resolve(args.values['run-dir']) : undefined;
  if (!runDir && resume === 'auto') runDir = latestRunOf(config.logging.runs_dir!, config.name ?? 'run');
  runDir ??= path.join(config.logging.runs_dir!, newRunId(config.name ?? 'run'));
  const configFile = prepareRunDirectory(runDir, config, { configPath, command: [process.execPath, ...process.argv.slice(1)] });
  console.error(`fsdp-train: run ${path.basename(runDir)} in ${runDir}`);

  const nativeArgs = ['--config', configFile, '--run-dir', runDir];
  if (resume) nativeArgs.push('--resume', resume === 'auto' ? 'auto' : path.resolve(resume));
  const code = await runNative(native, nativeArgs);
  if (code > 128) markEndedWithoutRunEnd(runDir, `the runtime ended by signal ${code - 128}`);
  return code;
}

/** Runs the native binary with inherited output; resolves to its exit code (128 + N for signal N). */
function runNative(native: string, argv: string[], stdin?: string): Promise<number> {
  return new Promise((resolve) => {
    // OpenMP threads that spin while idle slow the run down on few shared cores (native/src/cli/main.cc).
    const env = { ...process.env, OMP_WAIT_POLICY: process.env.OMP_WAIT_POLICY ?? 'passive' };
    const child = spawn(native, argv, { stdio: [stdin === undefined ? 'ignore' : 'pipe', 'inherit', 'inherit'], env });
    if (stdin !== undefined) child.stdin!.end(stdin);
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

if (require.main === module) void main(process.argv.slice(2)).then((code) => process.exit(code));
