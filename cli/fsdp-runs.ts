// `npx fsdp-runs show PATH [--json] [--ssh-config FILE]`: what the editor would show of a run, from a
// terminal — per scalar tag its count, first and last step, last value and wall time, and every
// series that was NaN or Inf — for a run folder (metrics.jsonl, TensorBoard, a command's printed
// output) or a TensorBoard log folder, on this machine or `host:path` on an SSH host, read through
// the same decoders, history and machines as the editor's watch.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { checkHostAlias } from '../core/remote/remote-command';
import type { TagSummary } from '../core/runs/scalar-history';
import { LocalMachine } from '../runs/machines/local-machine';
import type { RunMachine } from '../runs/machines/run-machine';
import { SshMachine } from '../runs/machines/ssh-machine';
import { runStatusOf } from '../runs/watch/run-status';
import { readRunOnce, type ReadProblem, type RunRead } from './runs/read-once';
import { terminalSafe, terminalSafeJson } from './runs/terminal-safe';
import { exitWhenFlushed } from './exit-when-flushed';

const USAGE = `usage: fsdp-runs show PATH [--json] [--ssh-config FILE]

PATH is a run folder (runs/<run-id>/ with run.json and metrics.jsonl; a command's printed step lines
in stdout.log and stderr.log are read as the dashboard reads them) or a TensorBoard log folder
(events.out.tfevents.* files), on this machine or on an SSH host as host:path (host as in your ssh
config; --ssh-config FILE passes ssh -F FILE). --json prints
{"tags": {TAG: {"count", "first_step", "last_step", "last_value", "last_wall_time"}},
 "nonfinite": [{"tag", "step", "rank"}], "problems": [...]}: nonfinite has each series that was NaN
or Inf, at its first such step (rank null where the writer does not say).
Exit codes: 0 read (problems are listed), 1 nothing could be read there, 2 bad arguments.`;

export interface ShowJson {
  tags: Record<string, TagSummary>;
  /** Every series (tag, and rank where known) that was NaN or Inf, at its first such step. */
  nonfinite: Array<{ tag: string; step: number; rank: number | null }>;
  problems: ReadProblem[];
}

export async function main(argv: string[]): Promise<number> {
  let args;
  try {
    args = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { json: { type: 'boolean' }, 'ssh-config': { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    });
  } catch (e) {
    console.error(`fsdp-runs: ${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  if (args.values.help) {
    console.log(USAGE);
    return 0;
  }
  const [verb, where, ...rest] = args.positionals;
  if (verb !== 'show' || !where || rest.length) {
    console.error(USAGE);
    return 2;
  }
  const place = locate(where, args.values['ssh-config']);
  if ('error' in place) {
    console.error(`fsdp-runs: ${place.error}`);
    return 2;
  }
  let read: RunRead;
  try {
    read = await readRunOnce(place.machine, place.dir);
  } catch (e) {
    console.error(`fsdp-runs: ${(e as Error).message}`);
    return 1;
  }
  const json = showJson(read);
  if (args.values.json) console.log(terminalSafeJson(json));
  else console.log(showText(where, read, json));
  return 0;
}

/** host:path on an SSH host, or a path here (a local path wins when it exists). */
export function locate(where: string, sshConfig?: string): { machine: RunMachine; dir: string } | { error: string } {
  const m = /^([^/:]+):(.+)$/.exec(where);
  if (!m || existsSync(where)) return { machine: new LocalMachine(), dir: path.resolve(where) };
  const [, host, dir] = m;
  const bad = checkHostAlias(host);
  if (bad) return { error: bad };
  return { machine: new SshMachine(host, () => ({ ...(sshConfig ? { configFile: sshConfig } : {}) })), dir };
}

export function showJson(read: RunRead): ShowJson {
  // No prototype: a tag named __proto__ is a key like any other (on {} it set the prototype and vanished).
  const tags: Record<string, TagSummary> = Object.create(null) as Record<string, TagSummary>;
  for (const tag of read.history.scalars.tags()) {
    const s = read.history.scalars.summary(tag);
    if (s) tags[tag] = s;
  }
  const nonfinite = read.history.nonFinite.list().map(({ tag, step, rank }) => ({ tag, step, rank }));
  return { tags, nonfinite, problems: read.problems };
}

function showText(where: string, read: RunRead, json: ShowJson): string {
  const m = read.manifest;
  const status = statusOf(read);
  const head =
    read.kind === 'run'
      ? `run ${m?.run_id ?? path.basename(where)}${status ? ` (${status})` : ''}`
      : 'TensorBoard log folder';
  // Every text from the run folder goes through terminalSafe: it is data, not terminal control.
  const rows = Object.entries(json.tags).map(([tag, s]) => [
    terminalSafe(tag),
    String(s.count),
    String(s.first_step),
    String(s.last_step),
    s.last_value === null ? 'not finite' : formatValue(s.last_value),
    s.last_wall_time === null ? '' : new Date(s.last_wall_time * 1000).toISOString().replace('T', ' ').slice(0, 19),
  ]);
  const header = ['tag', 'count', 'first', 'last', 'last value', 'last wall time (UTC)'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => (i === 0 || i === 5 ? c.padEnd(widths[i]) : c.padStart(widths[i])))
      .join('  ')
      .trimEnd();
  const out = [
    terminalSafe(`${head}: ${where}`),
    `${read.files.length} file${read.files.length === 1 ? '' : 's'} read`,
    '',
  ];
  if (rows.length) out.push(line(header), ...rows.map(line));
  else out.push('no scalars yet');
  if (json.nonfinite.length) {
    out.push('', 'NaN or Inf (first step of each):');
    for (const n of json.nonfinite)
      out.push(`  ${terminalSafe(n.tag)} from step ${n.step}${n.rank !== null ? `, rank ${n.rank}` : ''}`);
  }
  if (json.problems.length) {
    out.push('', `${json.problems.length} problem${json.problems.length === 1 ? '' : 's'}:`);
    for (const p of json.problems.slice(0, 50)) out.push(`  ${terminalSafe(`${p.file}:${p.offset}: ${p.message}`)}`);
  }
  return out.join('\n');
}

/**
 * The run's status as the editor's watch tells it (runs/watch/run-status.ts): from the stream — the
 * latest start and end, whose they are told by the attempt they name and their place against the
 * attempt run.json names — and run.json only where the stream has nothing of that attempt yet (a
 * resume starting). Read once: no liveness or SLURM asked. A folder without run.json: its end.
 */
function statusOf(read: RunRead): string | undefined {
  const { history, manifest, endOffset, startOffset } = read;
  if (!manifest) return history.end?.status;
  return runStatusOf({ history, manifest, job: undefined, vanished: undefined, endOffset, startOffset });
}

function formatValue(v: number): string {
  return Math.abs(v) >= 1e5 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(4) : String(Number(v.toPrecision(6)));
}

if (require.main === module) void main(process.argv.slice(2)).then(exitWhenFlushed);
