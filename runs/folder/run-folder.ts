// The one place a run's identity and its starting manifest (runs/<run-id>/run.json) are composed,
// for every kind of run: the native runtime launched by `npx fsdp-train` or by the editor (locally,
// on an SSH host, across hosts, on SLURM), and a person's own training command. The run id is the
// run folder's name; the native runtime started directly on a folder without run.json takes that
// name too, so every run is named by the same rule. Composed here, written by one writer only,
// python/fsdp_studio/run_manifest.py: by the run's owner, the supervisor, which is handed this
// manifest as it starts, and for a SLURM run on the login host (writeManifestOn) before the job
// starts and after it is gone.
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { MANIFEST_MAX_BYTES, readRegularFileSync, RefusedFile } from '../../core/protocol/regular-file';
import {
  parseRunManifest,
  RUN_MANIFEST_VERSION,
  type ManifestWorld,
  type RunManifest,
} from '../../core/protocol/run-manifest';
import type { LoginHost } from '../machines/login-host';
import { LOCAL } from '../machines/run-machine';
import { COMPANION_PACKAGE } from '../runtime/remote-companion';
import { SUPERVISOR_PYTHON } from '../launch/supervised-native';

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
  // The last run's end, its processes and its attempt: a group, pids or an attempt named now would be
  // another's (the new attempt's owner names its own as it takes the folder).
  const {
    end_reason: _ended,
    attempt: _attempt,
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

/** Whether a folder on this machine is a run's: it holds the run's manifest (read-only probe). */
export function holdsRunManifest(dir: string): boolean {
  return existsSync(path.join(dir, 'run.json'));
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

/** run.json's text, as the one writer is handed it. */
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

/** The one writer of run.json (python/fsdp_studio/run_manifest.py), under a folder holding the companion package. */
export function manifestWriterPath(companionRoot: string): string {
  return `${companionRoot.replace(/\/+$/, '')}/${COMPANION_PACKAGE}/run_manifest.py`;
}

/**
 * Makes `file` of a run folder on a login host a regular file, never through a link, as the
 * companion's writers open theirs (python/fsdp_studio/run_folder_file.py create): for a file
 * another program then opens by name, following links (slurmstepd, a SLURM job's output). Refused
 * with the file's name and what it is instead.
 */
export async function createRegularFileOn(host: LoginHost, companionRoot: string, file: string): Promise<void> {
  const maker = `${companionRoot.replace(/\/+$/, '')}/${COMPANION_PACKAGE}/run_folder_file.py`;
  const r = await host.run([SUPERVISOR_PYTHON, maker, 'create', file]);
  if (r.code !== 0)
    throw new Error(
      `${r.stderr.trim() || `making ${file} failed (exit ${r.code})`}${host.target === LOCAL ? '' : ` (on ${host.target})`}`,
    );
}

/**
 * Writes run.json into a run folder on a login host, through the one writer there (atomically):
 * a SLURM run's before its job starts, and after the job is gone (when no owner is there to).
 */
export async function writeManifestOn(
  host: LoginHost,
  companionRoot: string,
  runDir: string,
  m: RunManifest,
): Promise<void> {
  const r = await host.run([SUPERVISOR_PYTHON, manifestWriterPath(companionRoot), 'write', runDir], {
    input: manifestText(m),
  });
  if (r.code !== 0)
    throw new Error(
      `writing ${runDir}/run.json${host.target === LOCAL ? '' : ` on ${host.target}`} failed: ${r.stderr || `exit ${r.code}`}`,
    );
}
