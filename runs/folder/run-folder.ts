// The one place a run's identity and its manifest (runs/<run-id>/run.json) are made, for every kind
// of run: the native runtime launched by `npx fsdp-train` or by the editor (locally or on an SSH
// host), and a person's own training command launched by the editor. The run id is the run
// folder's name; the native runtime started directly on a folder without run.json (by mpirun or
// srun, without fsdp-train) takes that name too (native/src/metrics/run_manifest.cc), so every run
// is named by the same rule. Writers of run.json after this one (the runtime as the run goes, the
// companion's supervisor for a person's command) merge their fields into what is here.
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { MANIFEST_MAX_BYTES, readRegularFileSync, RefusedFile } from '../../core/protocol/regular-file';
import {
  parseRunManifest,
  RUN_MANIFEST_VERSION,
  type ManifestWorld,
  type RunManifest,
} from '../../core/protocol/run-manifest';
import { writeHostFile, type LoginHost } from '../machines/login-host';

/**
 * `<name>-YYYYMMDD-HHMMSS-<4 hex>` (UTC): sorts by start time, unique across quick relaunches, and
 * safe as a folder name and as a shell word whatever the config's name holds.
 */
export function newRunId(name: string | undefined, now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  const slug =
    (name ?? 'run')
      .replace(/[^A-Za-z0-9._-]+/g, '-')
      .replace(/^[-.]+|-+$/g, '')
      .slice(0, 40) || 'run';
  return `${slug}-${stamp}-${randomBytes(2).toString('hex')}`;
}

/** What a launcher knows about a run when it starts it. */
export interface RunFacts {
  runId: string;
  /** The config's (or launch spec's) name, for display. */
  name?: string;
  /** The resolved config or launch spec, as the run reads it. */
  config: Record<string, unknown>;
  /** The file it was launched from. */
  configPath?: string;
  world: ManifestWorld;
  /** Host name where rank 0 runs (or the SSH alias, when launched there from the editor). */
  host: string;
  /** "local" or the SSH host alias. */
  target: string;
  /** The argument vector that starts the run. */
  command: string[];
  maxSteps?: number;
  /** "command": a person's own training command; absent: the native runtime. */
  kind?: RunManifest['kind'];
  /** Where the run writes logs other than metrics.jsonl (TensorBoard event files). */
  logs?: RunManifest['logs'];
}

/**
 * The manifest a launch writes before the run starts (status "starting"). With `previous` (a resume
 * or a relaunch in the same folder) the run keeps its identity and history fields; its old end is
 * no longer the end.
 */
export function startingManifest(facts: RunFacts, previous?: RunManifest, now = Date.now() / 1000): RunManifest {
  // The last run's end, and its processes: a group or pids named now would be another's.
  const {
    end_reason: _ended,
    pids: _pids,
    pgid: _pgid,
    leader_start: _start,
    boot_id: _boot,
    ...kept
  } = previous ?? ({} as Partial<RunManifest>);
  return {
    ...kept,
    v: RUN_MANIFEST_VERSION,
    run_id: previous?.run_id ?? facts.runId,
    ...(facts.name ? { name: facts.name } : {}),
    created: previous?.created ?? now,
    updated: now,
    status: 'starting',
    ...(facts.maxSteps !== undefined ? { max_steps: facts.maxSteps } : {}),
    config: facts.config,
    ...(facts.configPath ? { config_path: facts.configPath } : {}),
    world: facts.world,
    host: facts.host,
    target: facts.target,
    command: facts.command,
    ...(facts.kind ? { kind: facts.kind } : {}),
    ...(facts.logs ? { logs: facts.logs } : {}),
  };
}

export function writeJsonAtomically(file: string, value: unknown): void {
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, JSON.stringify(value, null, 2) + '\n');
  renameSync(tmp, file);
}

/** run.json of a folder on this machine; undefined when absent or unreadable. */
export function readManifestFile(runDir: string): RunManifest | undefined {
  let bytes: Buffer | undefined;
  try {
    bytes = readRegularFileSync(path.join(runDir, 'run.json'), MANIFEST_MAX_BYTES);
  } catch (e) {
    if (e instanceof RefusedFile) return undefined; // a FIFO or device named run.json: unreadable
    throw e;
  }
  if (bytes === undefined) return undefined;
  const parsed = parseRunManifest(bytes.toString('utf8'));
  return 'manifest' in parsed ? parsed.manifest : undefined;
}

/**
 * Writes run.json into runDir (created if missing), with the launcher's own pid. When this process
 * is the group leader the detached start recorded (fsdp-train exec'd by it), that record is kept:
 * it names this very process.
 */
export function writeStartingManifest(runDir: string, facts: RunFacts): RunManifest {
  mkdirSync(runDir, { recursive: true });
  const previous = readManifestFile(runDir);
  const ours =
    previous?.pgid === process.pid
      ? {
          pgid: previous.pgid,
          ...(previous.leader_start !== undefined ? { leader_start: previous.leader_start } : {}),
          ...(previous.boot_id ? { boot_id: previous.boot_id } : {}),
        }
      : {};
  const manifest = { ...startingManifest(facts, previous), pids: [process.pid], ...ours };
  writeJsonAtomically(path.join(runDir, 'run.json'), manifest);
  return manifest;
}

/** The most recently created run of this name under runsDir, for `--resume auto`. */
export function latestRunOf(runsDir: string, name: string): string | undefined {
  if (!existsSync(runsDir)) return undefined;
  let best: { dir: string; created: number } | undefined;
  for (const entry of readdirSync(runsDir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const dir = path.join(runsDir, entry.name);
    const m = readManifestFile(dir);
    if (m && m.name === name && (!best || m.created > best.created)) best = { dir, created: m.created };
  }
  return best?.dir;
}

/** What a run folder holds before a launch into it, to tell afterwards whether the launch started the run at all. */
export interface FolderBefore {
  /** run.json's bytes; undefined for a new folder. */
  manifest?: Buffer;
  /** metrics.jsonl's size: a run that starts appends its run_start after it. */
  metricsBytes: number;
}

export function folderBefore(runDir: string): FolderBefore {
  let manifest: Buffer | undefined;
  try {
    manifest = readRegularFileSync(path.join(runDir, 'run.json'), MANIFEST_MAX_BYTES);
  } catch (e) {
    if (!(e instanceof RefusedFile)) throw e;
  }
  let metricsBytes = 0;
  try {
    metricsBytes = statSync(path.join(runDir, 'metrics.jsonl')).size;
  } catch {
    // no metrics yet
  }
  return { ...(manifest ? { manifest } : {}), metricsBytes };
}

/**
 * After a launch that ended without the run saying how (exit ≠ 0, run.json still "starting"): when
 * the launch never started the run (no run_start after `before.metricsBytes` — a refused --resume,
 * a config the runtime refused) into a folder that had a run, run.json is put back as it was, so
 * the run keeps the end it had ("completed, step 30" became "failed, step 0"); otherwise the run is
 * marked failed with `reason` (markEndedWithoutRunEnd).
 */
export function endLaunchWithoutRunEnd(runDir: string, before: FolderBefore, reason: string): void {
  // Still the launch's own "starting" manifest: the runtime wrote nothing of its own in it.
  const untouched = readManifestFile(runDir)?.status === 'starting';
  if (before.manifest && untouched && !startedSince(path.join(runDir, 'metrics.jsonl'), before.metricsBytes)) {
    const file = path.join(runDir, 'run.json');
    const tmp = `${file}.tmp-${process.pid}`;
    writeFileSync(tmp, before.manifest);
    renameSync(tmp, file);
    return;
  }
  markEndedWithoutRunEnd(runDir, reason);
}

/** Whether metrics.jsonl holds a run_start after `offset` (its first MiB after it: a run_start comes first). */
function startedSince(file: string, offset: number): boolean {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch {
    return false;
  }
  try {
    if (!fstatSync(fd).isFile()) return false;
    const buf = Buffer.alloc(1 << 20);
    const n = readSync(fd, buf, 0, buf.length, offset);
    return /"type"\s*:\s*"run_start"/.test(buf.subarray(0, n).toString('utf8'));
  } finally {
    closeSync(fd);
  }
}

/** Marks a run failed when it ended without saying so itself (killed by a signal, refused its config). */
export function markEndedWithoutRunEnd(runDir: string, reason: string): void {
  const m = readManifestFile(runDir);
  if (!m || (m.status !== 'starting' && m.status !== 'running')) return;
  writeJsonAtomically(path.join(runDir, 'run.json'), {
    ...m,
    status: 'failed',
    end_reason: reason,
    updated: Date.now() / 1000,
  });
}

/** run.json's text, as every writer in this project's TypeScript writes it. */
export function manifestText(m: RunManifest): string {
  return `${JSON.stringify(m, null, 2)}\n`;
}

/**
 * run.json of a run folder on a login host (this machine, or over ssh for a SLURM cluster), read as
 * every reader reads it (a regular file only, within MANIFEST_MAX_BYTES); undefined when absent,
 * refused or invalid.
 */
export async function readManifestOn(host: LoginHost, runDir: string): Promise<RunManifest | undefined> {
  const r = await host.run([
    'sh',
    '-c',
    `test -f "$1" && head -c ${MANIFEST_MAX_BYTES} -- "$1"`,
    'fsdp-read',
    `${runDir}/run.json`,
  ]);
  if (r.code !== 0) return undefined;
  const parsed = parseRunManifest(r.stdout);
  return 'manifest' in parsed ? parsed.manifest : undefined;
}

/** Writes run.json into a run folder on a login host, atomically (before the run's owner exists, or after it is gone). */
export async function writeManifestOn(host: LoginHost, runDir: string, m: RunManifest): Promise<void> {
  await writeHostFile(host, `${runDir}/run.json`, manifestText(m));
}
