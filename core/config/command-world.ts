// How many ranks a person's command starts, as far as the command, its launch spec's environment and
// the files it names can tell before it runs — and, where they cannot, what decides it, in words
// (the count then comes from the ranks once they start: python/fsdp_studio/run_processes.py).
// deepspeed is counted as its launcher (deepspeed/launcher/runner.py) counts: a hostfile (-H, else
// /job/hostfile) is the resource pool, host by host its slots; without one the pool is this host's
// GPUs, narrowed by CUDA_VISIBLE_DEVICES when no --include/--exclude/--num_gpus/--num_nodes is
// given; --include/--exclude pick hosts and slots; then --num_nodes keeps the first hosts and
// --num_gpus gives each host that many. Pure: the hostfile is read through readFile.
import path from 'node:path';
import { worldSizeOfCommand, type UserCommand } from './user-command';

/** The ranks a command starts: a count (and where it comes from), or what decides it at start. */
export type CommandWorld =
  { size: number; why?: string; decidedBy?: undefined } | { size?: undefined; why?: undefined; decidedBy: string };

/** deepspeed's hostfile when -H names none. */
export const DEEPSPEED_DEFAULT_HOSTFILE = '/job/hostfile';

export interface CommandWorldContext {
  /** Ranks FSDP Studio starts itself for a plain python command (the spec's nproc_per_node). */
  nproc: number;
  /** The launch spec's env: what the command gets besides the editor's own environment. */
  env: Record<string, string>;
  /** The command's working folder (a relative hostfile is found there). */
  cwd: string;
  /** Reads a file on the machine the command runs on; absent where that machine's files cannot be read (an SSH host). */
  readFile?: (file: string) => string | undefined;
}

/** The ranks `c` starts, counted as its launcher counts them, or what decides it. */
export function commandWorld(c: UserCommand, ctx: CommandWorldContext): CommandWorld {
  if (c.launcher === 'deepspeed') return deepspeedWorld(c, ctx);
  const size = worldSizeOfCommand(c, ctx.nproc);
  if (size !== undefined) return { size };
  // torchrun with no --nproc_per_node starts one rank per node; a word (auto, gpu, cpu) is torchrun's to count.
  if (c.launcher === 'torchrun') {
    const word = c.argv.find((w, i) => i > 0 && /^--nproc[_-]per[_-]node(=|$)/.test(w));
    if (!word) return { size: c.nnodes ?? 1 };
    const value = word.includes('=') ? word.slice(word.indexOf('=') + 1) : c.argv[c.argv.indexOf(word) + 1];
    return { decidedBy: `torchrun's --nproc_per_node ${value ?? ''}`.trim() };
  }
  if (c.launcher === 'accelerate') return { decidedBy: "accelerate's config (no --num_processes)" };
  if (c.launcher === 'mpi') return { decidedBy: "mpirun's slots (no -np)" };
  return { decidedBy: 'the command' };
}

/** The words a header or a toast says for a world the launcher decides: "… (counted when the ranks report)". */
export function decidedByWords(decidedBy: string): string {
  return `${decidedBy} (counted when the ranks report)`;
}

/** deepspeed's world, by the rules of its runner (above). */
export function deepspeedWorld(c: UserCommand, ctx: CommandWorldContext): CommandWorld {
  const gpus = c.nprocPerNode;
  const nodes = c.nnodes;
  let include = c.resources?.include ?? '';
  const exclude = c.resources?.exclude ?? '';
  const hostfileName = c.resources?.hostfile ?? DEEPSPEED_DEFAULT_HOSTFILE;
  let pool: Map<string, number> | undefined;
  let poolWhy = '';
  if (ctx.readFile) {
    const text = ctx.readFile(path.resolve(ctx.cwd, hostfileName));
    if (text !== undefined) {
      const parsed = parseHostfile(text);
      if (typeof parsed === 'string')
        return { decidedBy: `deepspeed, which refuses the hostfile ${hostfileName}: ${parsed}` };
      pool = parsed;
      poolWhy = `hostfile ${hostfileName}`;
    }
  } else if (c.resources?.hostfile !== undefined) {
    return { decidedBy: `the slots of the hostfile ${hostfileName} on the host` };
  }
  const filtered = include !== '' || exclude !== '';
  if ((gpus !== undefined || nodes !== undefined) && filtered)
    return { decidedBy: 'deepspeed, which refuses --num_gpus/--num_nodes with --include/--exclude' };
  let visibleWhy = '';
  if (!pool && ctx.env.CUDA_VISIBLE_DEVICES && !filtered && (nodes ?? 0) <= 1 && gpus === undefined) {
    include = `localhost:${ctx.env.CUDA_VISIBLE_DEVICES}`;
    visibleWhy = `CUDA_VISIBLE_DEVICES=${ctx.env.CUDA_VISIBLE_DEVICES} in the spec's env`;
  }
  if (!pool && (nodes ?? 0) > 1)
    return { decidedBy: `deepspeed, which refuses --num_nodes ${nodes} without a hostfile` };
  if (!pool) {
    // This host's GPUs: their number is the host's, known only when the ranks start — unless the
    // options name the slots (--include localhost:0,2) or give each host a count (--num_gpus).
    if (gpus !== undefined) return { size: gpus, why: `--num_gpus ${gpus}` };
    if (exclude !== '') return { decidedBy: `all GPUs of the host but --exclude ${exclude}` };
    if (include === '') return { decidedBy: 'all GPUs of the host' };
    const slots = nodeSpecs(include).get('localhost');
    if (!slots?.length) return { decidedBy: `all GPUs of the host (--include ${include})` };
    return { size: slots.length, why: visibleWhy || `--include ${include}` };
  }
  let active = new Map([...pool].map(([host, n]) => [host, Array.from({ length: n }, (_, i) => String(i))]));
  if (include !== '') {
    const picked = nodeSpecs(include);
    active = new Map(
      [...active]
        .filter(([host]) => picked.has(host))
        .map(([host, slots]) => [host, picked.get(host)!.length ? picked.get(host)! : slots]),
    );
  } else if (exclude !== '') {
    for (const [host, slots] of nodeSpecs(exclude)) {
      const left = slots.length ? (active.get(host) ?? []).filter((s) => !slots.includes(s)) : [];
      if (left.length) active.set(host, left);
      else active.delete(host);
    }
  }
  let hosts = [...active];
  if (nodes !== undefined) hosts = hosts.slice(0, nodes);
  const size = hosts.reduce((n, [, slots]) => n + (gpus ?? slots.length), 0);
  const how = [
    poolWhy,
    include ? `--include ${include}` : exclude ? `--exclude ${exclude}` : '',
    nodes !== undefined ? `--num_nodes ${nodes}` : '',
    gpus !== undefined ? `--num_gpus ${gpus}` : '',
  ].filter(Boolean);
  return size > 0
    ? { size, why: `${how.join(', ')}: ${hosts.length} host${hosts.length === 1 ? '' : 's'}` }
    : { decidedBy: `deepspeed, which finds no slot left by ${how.join(', ')}` };
}

/** A hostfile's hosts and their slots (`worker-0 slots=8`; # comments and blank lines skipped), or why deepspeed refuses it. */
export function parseHostfile(text: string): Map<string, number> | string {
  const pool = new Map<string, number>();
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const m = /^(\S+)\s+slots=(\d+)/.exec(line);
    if (!m) return `line ${i + 1} is not "HOST slots=N"`;
    if (pool.has(m[1])) return `${m[1]} is listed twice`;
    pool.set(m[1], Number(m[2]));
  }
  return pool.size ? pool : 'it lists no host';
}

/** NAME[:SLOT[,SLOT…]][@…]: each host's slots, as written and each once (empty: all of them). */
function nodeSpecs(spec: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const node of spec.split('@')) {
    const [host, slots] = node.split(':');
    const list = (slots ?? '').split(',').filter((s) => s !== '');
    out.set(host, [...new Set([...(out.get(host) ?? []), ...list])]);
  }
  return out;
}
