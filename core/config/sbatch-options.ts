// What an sbatch option means, however it is spelled, for the config's checks
// (core/rules/run-config/cluster.ts) and the batch script (runs/slurm/slurm-script.ts), which sets
// the options of SET_BY_THE_SCRIPT from the config. sbatch reads its options — on the command line
// and on #SBATCH lines alike — with getopt_long: a long option may be abbreviated to any prefix no
// other long option shares (an exact name always wins), its value follows `=` or comes as the next
// word; short options take their value attached (-t10) or as the next word, and short options
// without a value may be grouped (-HQ). So `--no-requ`, `--sig=B:USR1@9`, `-t 5` and `-D/tmp` each
// set an option the script sets, and a later line wins: such a directive must be refused.

type Arg = 'none' | 'required' | 'optional';

/**
 * sbatch's options, as Slurm 22.05's sbatch(1) documents them: long name, value, short letter.
 * The whole list matters, not only the options the script sets: a prefix is an abbreviation only
 * when no other long option starts with it.
 */
const SBATCH_OPTIONS: Array<[string, Arg, string?]> = [
  ['account', 'required', 'A'],
  ['acctg-freq', 'required'],
  ['array', 'required', 'a'],
  ['batch', 'required'],
  ['bb', 'required'],
  ['bbf', 'required'],
  ['begin', 'required', 'b'],
  ['chdir', 'required', 'D'],
  ['cluster-constraint', 'required'],
  ['clusters', 'required', 'M'],
  ['comment', 'required'],
  ['constraint', 'required', 'C'],
  ['container', 'required'],
  ['contiguous', 'none'],
  ['core-spec', 'required', 'S'],
  ['cores-per-socket', 'required'],
  ['cpu-freq', 'required'],
  ['cpus-per-gpu', 'required'],
  ['cpus-per-task', 'required', 'c'],
  ['deadline', 'required'],
  ['delay-boot', 'required'],
  ['dependency', 'required', 'd'],
  ['distribution', 'required', 'm'],
  ['error', 'required', 'e'],
  ['exclude', 'required', 'x'],
  ['exclusive', 'optional'],
  ['export', 'optional'],
  ['export-file', 'required'],
  ['extra-node-info', 'required', 'B'],
  ['get-user-env', 'optional'],
  ['gid', 'required'],
  ['gpu-bind', 'required'],
  ['gpu-freq', 'required'],
  ['gpus', 'required', 'G'],
  ['gpus-per-node', 'required'],
  ['gpus-per-socket', 'required'],
  ['gpus-per-task', 'required'],
  ['gres', 'required'],
  ['gres-flags', 'required'],
  ['help', 'none', 'h'],
  ['hint', 'required'],
  ['hold', 'none', 'H'],
  ['ignore-pbs', 'none'],
  ['input', 'required', 'i'],
  ['job-name', 'required', 'J'],
  ['kill-on-invalid-dep', 'required'],
  ['licenses', 'required', 'L'],
  ['mail-type', 'required'],
  ['mail-user', 'required'],
  ['mcs-label', 'required'],
  ['mem', 'required'],
  ['mem-bind', 'required'],
  ['mem-per-cpu', 'required'],
  ['mem-per-gpu', 'required'],
  ['mincpus', 'required'],
  ['network', 'required'],
  ['nice', 'optional'],
  ['no-kill', 'optional', 'k'],
  ['no-requeue', 'none'],
  ['nodefile', 'required', 'F'],
  ['nodelist', 'required', 'w'],
  ['nodes', 'required', 'N'],
  ['ntasks', 'required', 'n'],
  ['ntasks-per-core', 'required'],
  ['ntasks-per-gpu', 'required'],
  ['ntasks-per-node', 'required'],
  ['ntasks-per-socket', 'required'],
  ['open-mode', 'required'],
  ['output', 'required', 'o'],
  ['overcommit', 'none', 'O'],
  ['oversubscribe', 'none', 's'],
  ['parsable', 'none'],
  ['partition', 'required', 'p'],
  ['power', 'required'],
  ['prefer', 'required'],
  ['priority', 'required'],
  ['profile', 'required'],
  ['propagate', 'optional'],
  ['qos', 'required', 'q'],
  ['quiet', 'none', 'Q'],
  ['reboot', 'none'],
  ['requeue', 'none'],
  ['reservation', 'required'],
  ['signal', 'required'],
  ['sockets-per-node', 'required'],
  ['spread-job', 'none'],
  ['switches', 'required'],
  ['test-only', 'none'],
  ['thread-spec', 'required'],
  ['threads-per-core', 'required'],
  ['time', 'required', 't'],
  ['time-min', 'required'],
  ['tmp', 'required'],
  ['uid', 'required'],
  ['usage', 'none'],
  ['use-min-nodes', 'none'],
  ['verbose', 'none', 'v'],
  ['version', 'none', 'V'],
  ['wait', 'none', 'W'],
  ['wait-all-nodes', 'required'],
  ['wckey', 'required'],
  ['wrap', 'required'],
];

/** The options the batch script sets, and where each comes from; an extra directive must not set them again. */
export const SET_BY_THE_SCRIPT: Record<string, string> = {
  'job-name': 'launch.slurm.job_name',
  chdir: "the run folder, the job's working directory",
  output: "the run folder (slurm-%j.out), where the editor reads the job's output",
  error: "the run folder (slurm-%j.out), where the editor reads the job's output",
  'open-mode': "the run folder's job output, appended across requeues",
  nodes: 'launch.nnodes',
  ntasks: 'launch.nnodes × launch.nproc_per_node',
  'ntasks-per-node': 'launch.nproc_per_node',
  'gpus-per-node': 'launch.slurm.gpus_per_node',
  'cpus-per-task': 'launch.slurm.cpus_per_task',
  partition: 'launch.slurm.partition',
  account: 'launch.slurm.account',
  qos: 'launch.slurm.qos',
  time: 'launch.slurm.time_limit',
  signal: 'launch.slurm.signal_before_limit_s (the save-and-requeue signal)',
  requeue: 'launch.slurm.requeue',
  'no-requeue': 'launch.slurm.requeue',
};

/**
 * Options that change how sbatch or the job behaves in ways the batch script and the editor rely
 * on, and why each breaks the run. The editor submits the script held, records the job id sbatch
 * prints in run.json, then releases it and follows that one job in the run folder.
 */
export const BREAKS_THE_RUN: Record<string, string> = {
  wait: 'sbatch would not return until the job ends, and the job is submitted held: the launch would wait for ever',
  array: "an array's tasks would all run in this one run folder, each writing its run.json and metrics",
  dependency:
    'the job would wait on other jobs after it is released, and every resume and requeue submits the same script again: a dependency on a job Slurm has forgotten holds it for ever',
  hold: 'the editor holds the job itself until run.json names it, then releases it; a resubmission of the script by hand would stay held',
  clusters: "the job would go to another cluster, where this login host's squeue, scontrol and scancel do not find it",
  'test-only': 'sbatch would only estimate when the job would start, and submit nothing',
  wrap: 'sbatch would run that command instead of the batch script',
  help: 'sbatch would print its help and submit nothing',
  usage: 'sbatch would print its usage and submit nothing',
  version: 'sbatch would print its version and submit nothing',
};

/** A problem of one extra directive: one sbatch cannot read, one that sets what the script sets, or one that breaks the run. */
export interface DirectiveProblem {
  severity: 'error' | 'warning';
  message: string;
}

/**
 * What is wrong with an extra directive, if anything, in the person's terms; the config checks
 * show it as you type and the batch script refuses it (runs/slurm/slurm-script.ts).
 */
export function directiveProblem(line: string): DirectiveProblem | undefined {
  const reading = readDirective(line);
  if ('problem' in reading) return { severity: 'warning', message: `${reading.problem}: sbatch would refuse the job` };
  const shown = JSON.stringify(line.trim());
  const breaking = reading.options.filter((o) => o in BREAKS_THE_RUN);
  if (breaking.length)
    return {
      severity: 'error',
      message: `${shown} sets ${breaking.map((o) => `--${o}`).join(' and ')}: ${breaking.map((o) => BREAKS_THE_RUN[o]).join('; ')}. Remove it`,
    };
  const owned = reading.options.filter((o) => o in SET_BY_THE_SCRIPT);
  if (owned.length === 0) return undefined;
  const what = owned.map((o) => `--${o} (from ${SET_BY_THE_SCRIPT[o]})`).join(' and ');
  return {
    severity: 'error',
    message: `${shown} sets ${what}, which the batch script already sets; a later #SBATCH line wins, so this one would override it: remove it`,
  };
}

/** What sbatch makes of one directive's words. */
export type DirectiveReading =
  /** Options it sets, by long name (a group of short flags sets several). */
  { options: string[] } | { problem: string };

/** How sbatch reads one extra directive (`--time=5`, `-t 5`, `--ti 5`, `-HD/tmp`, `#SBATCH -o x`). */
export function readDirective(line: string): DirectiveReading {
  const words = line
    .trim()
    .replace(/^#SBATCH\s+/, '')
    .split(/\s+/)
    .filter(Boolean);
  const first = words[0] ?? '';
  if (!first.startsWith('-') || first === '-' || first === '--')
    return {
      problem: `"${line.trim()}" is not an sbatch option (one option per directive, such as --constraint=a100)`,
    };
  if (first.startsWith('--')) {
    const [typed] = first.slice(2).split('=');
    const found = longOption(typed);
    if ('problem' in found) return found;
    return { options: [found.name] };
  }
  const options: string[] = [];
  for (let i = 1; i < first.length; i++) {
    const entry = SBATCH_OPTIONS.find(([, , short]) => short === first[i]);
    if (!entry) return { problem: `sbatch has no option -${first[i]}` };
    options.push(entry[0]);
    if (entry[1] !== 'none') break; // the rest of the word (or the next word) is its value
  }
  return { options };
}

function longOption(typed: string): { name: string } | { problem: string } {
  if (SBATCH_OPTIONS.some(([name]) => name === typed)) return { name: typed };
  const candidates = SBATCH_OPTIONS.filter(([name]) => name.startsWith(typed)).map(([name]) => name);
  if (candidates.length === 1 && typed.length > 0) return { name: candidates[0] };
  if (candidates.length > 1 && typed.length > 0)
    return { problem: `sbatch refuses --${typed}: it abbreviates ${candidates.map((c) => `--${c}`).join(', ')}` };
  return { problem: `sbatch has no option --${typed}` };
}

/**
 * A Slurm time limit in seconds: minutes, "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS";
 * undefined for none, UNLIMITED, or what is not a time.
 */
export function timeLimitSeconds(limit: unknown): number | undefined {
  if (typeof limit === 'number') return Number.isInteger(limit) && limit > 0 ? limit * 60 : undefined;
  if (typeof limit !== 'string') return undefined;
  const m = /^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$/.exec(limit.trim());
  if (!m) return undefined;
  const [days, a, b, c] = [m[1], m[2], m[3], m[4]].map((x) => (x === undefined ? undefined : Number(x)));
  if (days !== undefined) return days * 86400 + a! * 3600 + (b ?? 0) * 60 + (c ?? 0);
  if (c !== undefined) return a! * 3600 + b! * 60 + c;
  if (b !== undefined) return a! * 60 + b;
  return a! * 60;
}
