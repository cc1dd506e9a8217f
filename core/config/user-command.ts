// A person's own training command as FSDP Studio launches it: the words of the command line
// (split as a shell would quote them, but never run by a shell), which launcher it is — torchrun,
// `python -m torch.distributed.run`, `accelerate launch`, deepspeed, mpirun/srun, or a plain
// python script — how many ranks it starts, which signal stops it gracefully, and the command a
// DeepSpeed or accelerate config is launched with. Pure: unit-tested against each launcher's own
// command-line options.

export type LauncherKind = 'torchrun' | 'accelerate' | 'deepspeed' | 'mpi' | 'python' | 'other';

export interface UserCommand {
  argv: string[];
  launcher: LauncherKind;
  /** Ranks the command starts on each node and nodes, where its options say (undefined: not said). */
  nprocPerNode?: number;
  nnodes?: number;
  /** The training script (the first *.py word the launcher runs), when there is one. */
  script?: string;
  /** The config file its options name (accelerate's --config_file, deepspeed's --deepspeed/--deepspeed_config). */
  configFile?: string;
  /** deepspeed's resource options (-H/--hostfile, -i/--include, -e/--exclude), as written: core/config/command-world.ts counts them. */
  resources?: { hostfile?: string; include?: string; exclude?: string };
}

/** Words of a command line: whitespace separates, '…' and "…" group (with \ escapes in "…" and outside). */
export function splitCommand(text: string): { argv: string[] } | { error: string } {
  const argv: string[] = [];
  let word = '';
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "'") {
      const end = text.indexOf("'", i + 1);
      if (end < 0) return { error: `unclosed ' at character ${i + 1}` };
      word += text.slice(i + 1, end);
      inWord = true;
      i = end;
    } else if (c === '"') {
      let j = i + 1;
      for (; j < text.length && text[j] !== '"'; j++) {
        if (text[j] === '\\' && j + 1 < text.length && '"\\$`'.includes(text[j + 1])) j++;
        else if (text[j] === '$' || text[j] === '`')
          return {
            error: `${text[j]} inside "…" at character ${j + 1}: the command runs without a shell, so nothing is expanded; put variables in env, or use '…'`,
          };
        word += text[j];
      }
      if (j >= text.length) return { error: `unclosed " at character ${i + 1}` };
      inWord = true;
      i = j;
    } else if (c === '\\') {
      if (text[i + 1] === '\n') {
        i++; // a line continuation: no word
        continue;
      }
      if (i + 1 < text.length) word += text[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) argv.push(word);
      word = '';
      inWord = false;
    } else if ('|&;<>()`$'.includes(c)) {
      return {
        error: `"${c}" at character ${i + 1}: a launch spec runs one command without a shell (no pipes, redirections, ; or $VARIABLES); quote it if it is part of an argument, put variables in env, or run a script`,
      };
    } else {
      word += c;
      inWord = true;
    }
  }
  if (inWord) argv.push(word);
  if (argv.length === 0) return { error: 'the command is empty' };
  return { argv };
}

const PYTHON = /^(.*\/)?python(\d+(\.\d+)?)?$/;

/** Which launcher a command is, and what its options say about ranks, script and config. */
export function readCommand(argv: string[]): UserCommand {
  const exe = argv[0].slice(argv[0].lastIndexOf('/') + 1);
  if (exe === 'torchrun') return torchrun(argv, 1);
  if (PYTHON.test(argv[0])) {
    const m = argv.indexOf('-m');
    if (m > 0 && ['torch.distributed.run', 'torch.distributed.launch'].includes(argv[m + 1]))
      return torchrun(argv, m + 2);
    if (m > 0 && argv[m + 1] === 'accelerate.commands.launch') return accelerate(argv, m + 2);
    if (m > 0 && argv[m + 1] === 'deepspeed.launcher.runner') return deepspeed(argv, m + 2);
    return { argv, launcher: 'python', ...scriptFrom(argv, 1) };
  }
  if (exe === 'accelerate' && argv[1] === 'launch') return accelerate(argv, 2);
  if (exe === 'deepspeed') return deepspeed(argv, 1);
  if (['mpirun', 'mpiexec', 'srun'].includes(exe)) {
    const n = numberOpt(argv, ['-n', '-np', '--np', '--ntasks', '-N']);
    return { argv, launcher: 'mpi', ...(n !== undefined ? { nprocPerNode: n } : {}), ...scriptFrom(argv, 1) };
  }
  return { argv, launcher: 'other', ...scriptFrom(argv, 1) };
}

/**
 * The signal that stops the command gracefully, sent to its whole process group: every launcher
 * here (torchrun's elastic agent, accelerate, which runs torchrun, deepspeed's runner, mpirun)
 * takes SIGTERM as "stop the workers", and the workers, in the same group, get it directly too —
 * a script that catches it saves and exits. The supervisor records the run as stopped.
 */
export function stopSignalOf(launcher: LauncherKind): 'SIGTERM' {
  return STOP_SIGNALS[launcher];
}

const STOP_SIGNALS: Record<LauncherKind, 'SIGTERM'> = {
  torchrun: 'SIGTERM', // the elastic agent stops its workers and exits
  accelerate: 'SIGTERM', // runs torchrun (several processes) or the script itself
  deepspeed: 'SIGTERM', // its runner's handler terminates the workers
  mpi: 'SIGTERM', // mpirun forwards it to the ranks, then ends them
  python: 'SIGTERM',
  other: 'SIGTERM',
};

/** Ranks the whole command starts, when known: the launcher's options, or nproc for plain python. */
export function worldSizeOfCommand(c: UserCommand, nprocForPython = 1): number | undefined {
  if (c.launcher === 'python') return nprocForPython;
  if (c.nprocPerNode === undefined) return undefined;
  return c.nprocPerNode * (c.nnodes ?? 1);
}

/** The command a DeepSpeed or accelerate config is launched with, around the person's script. */
export function commandForConfig(
  kind: 'deepspeed' | 'accelerate',
  config: string,
  script: string,
  nproc: number,
): string[] {
  if (kind === 'accelerate') return ['accelerate', 'launch', '--config_file', config, script];
  return ['deepspeed', '--num_gpus', String(nproc), script, '--deepspeed', config];
}

// ---- each launcher's options ----

/** torchrun [options] script|-m module [args]: --nproc_per_node (or --nproc-per-node) N, --nnodes N or MIN:MAX. */
function torchrun(argv: string[], from: number): UserCommand {
  const opts = argv.slice(0, indexOfTarget(argv, from, TORCHRUN_FLAGS));
  const nproc = numberOpt(opts, ['--nproc_per_node', '--nproc-per-node']);
  const nnodes = rangeMax(stringOpt(opts, ['--nnodes']));
  return {
    argv,
    launcher: 'torchrun',
    ...(nproc !== undefined ? { nprocPerNode: nproc } : {}),
    ...(nnodes !== undefined ? { nnodes } : {}),
    ...scriptFrom(argv, from, TORCHRUN_FLAGS),
  };
}

/** accelerate launch [options] script [args]: --num_processes (total), --num_machines, --config_file. */
function accelerate(argv: string[], from: number): UserCommand {
  const opts = argv.slice(0, indexOfTarget(argv, from, ACCELERATE_FLAGS));
  const total = numberOpt(opts, ['--num_processes', '--num-processes']);
  const machines = numberOpt(opts, ['--num_machines', '--num-machines']) ?? 1;
  const configFile = stringOpt(opts, ['--config_file', '--config-file']);
  return {
    argv,
    launcher: 'accelerate',
    ...(total !== undefined ? { nprocPerNode: Math.max(1, Math.floor(total / machines)), nnodes: machines } : {}),
    ...(configFile ? { configFile } : {}),
    ...scriptFrom(argv, from, ACCELERATE_FLAGS),
  };
}

/** deepspeed [options] script [args]: --num_gpus (or --num_accelerators), --num_nodes, the resource options; the script's own --deepspeed[_config] names the config. */
function deepspeed(argv: string[], from: number): UserCommand {
  const at = indexOfTarget(argv, from, DEEPSPEED_FLAGS);
  const opts = argv.slice(0, at);
  const gpus = numberOpt(opts, ['--num_gpus', '--num-gpus', '--num_accelerators']);
  const nodes = numberOpt(opts, ['--num_nodes', '--num-nodes']);
  const configFile = stringOpt(argv.slice(at), ['--deepspeed', '--deepspeed_config']);
  const hostfile = stringOpt(opts, ['-H', '--hostfile']);
  const include = stringOpt(opts, ['-i', '--include']);
  const exclude = stringOpt(opts, ['-e', '--exclude']);
  const resources = {
    ...(hostfile !== undefined ? { hostfile } : {}),
    ...(include ? { include } : {}),
    ...(exclude ? { exclude } : {}),
  };
  return {
    argv,
    launcher: 'deepspeed',
    ...(gpus !== undefined ? { nprocPerNode: gpus } : {}),
    ...(nodes !== undefined ? { nnodes: nodes } : {}),
    ...(configFile ? { configFile } : {}),
    ...(Object.keys(resources).length ? { resources } : {}),
    ...scriptFrom(argv, from, DEEPSPEED_FLAGS),
  };
}

/** Options of each launcher that stand alone (take no value); all others take one. */
const TORCHRUN_FLAGS = new Set([
  '--standalone',
  '--no-python',
  '--no_python',
  '--run-path',
  '--run_path',
  '--module',
  '-m',
  '--tee',
]);
const ACCELERATE_FLAGS = new Set([
  '--cpu',
  '--multi_gpu',
  '--multi-gpu',
  '--tpu',
  '--use_deepspeed',
  '--use_fsdp',
  '--use_megatron_lm',
  '--use_xpu',
  '-m',
  '--module',
  '--no_python',
  '--no-python',
  '--debug',
  '-q',
  '--quiet',
  '--same_network',
  '--rdzv_conf',
]);
const DEEPSPEED_FLAGS = new Set([
  '--no_python',
  '--no_local_rank',
  '--force_multi',
  '--autotuning',
  '--elastic_training',
  '--bind_cores_to_rank',
  '--save_pid',
  '--enable_each_rank_log',
  '--no_ssh_check',
  '--no_ssh',
  '--module',
]);

/** Index of the first word after the launcher's options: the script (or module). */
function indexOfTarget(argv: string[], from: number, flags: Set<string>): number {
  let i = from;
  while (i < argv.length && argv[i].startsWith('-')) {
    const w = argv[i];
    i += w.includes('=') || flags.has(w) ? 1 : 2;
  }
  return Math.min(i, argv.length);
}

/**
 * Under SLURM FSDP Studio starts a plain python script (one task per rank) or torchrun (one per
 * node); other launchers (accelerate, deepspeed, mpirun) bring their own multi-node start. Says why
 * a launcher cannot be submitted, or undefined when it can.
 */
export function slurmCommandProblem(launcher: string): string | undefined {
  if (launcher === 'python' || launcher === 'torchrun') return undefined;
  return `under SLURM a launch spec runs a python script (one task per rank) or torchrun (one per node); ${launcher} starts its own ranks across nodes: run your script with torchrun or python instead`;
}

function scriptFrom(
  argv: string[],
  from: number,
  flags: Set<string> = new Set(['-u', '-O', '-B', '-s', '-E', '-I', '-q']),
): { script?: string } {
  const at = indexOfTarget(argv, from, flags);
  const word = argv[at];
  return word && word.endsWith('.py') ? { script: word } : {};
}

function stringOpt(argv: string[], names: string[]): string | undefined {
  let found: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    for (const n of names) {
      if (argv[i] === n && i + 1 < argv.length) found = argv[i + 1];
      else if (argv[i].startsWith(`${n}=`)) found = argv[i].slice(n.length + 1);
    }
  }
  return found;
}

function numberOpt(argv: string[], names: string[]): number | undefined {
  const v = stringOpt(argv, names);
  return v !== undefined && /^[1-9]\d*$/.test(v) ? Number(v) : undefined;
}

/** torchrun's --nnodes MIN:MAX counts as its most. */
function rangeMax(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const last = v.split(':').pop()!;
  return /^[1-9]\d*$/.test(last) ? Number(last) : undefined;
}
