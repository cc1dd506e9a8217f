// What the sbatch options of a run config mean, for the config's checks (core/rules/run-config/cluster.ts)
// and for the batch script (runs/slurm/slurm-script.ts), which sets the options listed here from
// the config: an extra directive must not set them again.
/** Options the script sets from the config; an extra directive must not set them again. */
export const OPTIONS_SET_BY_THE_SCRIPT = [
  '--job-name', '-J', '--chdir', '-D', '--output', '-o', '--error', '-e', '--open-mode', '--nodes', '-N', '--ntasks', '-n',
  '--ntasks-per-node', '--gpus-per-node', '--cpus-per-task', '-c', '--partition', '-p', '--account', '-A', '--qos', '-q',
  '--time', '-t', '--signal', '--requeue', '--no-requeue',
];

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
