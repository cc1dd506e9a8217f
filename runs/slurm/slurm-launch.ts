// Launching a run on SLURM: the runtime and the data where the job's nodes find them (the shared
// filesystem of the login host), the run folder with config.json, run.json and the batch script
// (job.sbatch), then the submission. The job is submitted held and released only once run.json
// names it, so the trainer never starts before the run knows its job (it reads run.json as it
// starts and keeps what it finds). Resume submits the same script again with --resume auto.
import { applyOverride, type ResolvedRunConfig } from '../../core/config/run-config';
import { BATCH_SCRIPT, batchScript, JOB_OUTPUT, sbatchArgv, slurmJobShape } from './slurm-script';
import { jobActive } from './slurm-state';
import type { RunManifest } from '../../core/protocol/run-manifest';
import { createRegularFileOn, newRunId, writeManifestOn } from '../folder/run-folder';
import { nativeSupervisor } from '../launch/supervised-native';
import { manifestFor, type LaunchRequest } from '../launch/launcher';
import { writeHostFile, type LoginHost } from '../machines/login-host';
import { RemoteRuntimeInstaller } from '../runtime/remote-runtime';
import { LOCAL } from '../machines/run-machine';
import type { SlurmCluster } from './slurm-cluster';
import type { SshSettings } from '../machines/ssh';

/** Where a run's files live on the cluster, and the config as the job's nodes see it. */
export interface SlurmPlacement {
  /** fsdp-train-native on the shared filesystem. */
  binary: string;
  /** The folder that holds run folders. */
  runsDir: string;
  /** The config with the data paths the nodes read. */
  config: ResolvedRunConfig;
}

export type PlaceRun = (config: ResolvedRunConfig, progress: (message: string) => void) => Promise<SlurmPlacement>;

export interface SlurmLaunchTarget {
  cluster: SlurmCluster;
  place: PlaceRun;
  /** The companion (python/ with fsdp_studio) on the login host's shared filesystem: its supervisor owns the job's run. */
  companion: (progress: (message: string) => void) => Promise<string>;
}

export interface LaunchedSlurmRun {
  target: string;
  runDir: string;
  runId: string;
  jobId: string;
  /** The batch script in the run folder. */
  script: string;
  /** sbatch's argument vector, as it was run. */
  argv: string[];
}

/**
 * A stopped job may still be winding down (its ranks exiting, Slurm's epilog): its successor must
 * not share the run folder with it. Waits for it to end, at most RESUME_WAIT_MS.
 */
export async function untilEnded(
  cluster: SlurmCluster,
  jobId: string | undefined,
  progress: (message: string) => void,
): Promise<void> {
  if (!jobId) return;
  for (const deadline = Date.now() + RESUME_WAIT_MS; ; await new Promise((r) => setTimeout(r, 1000))) {
    const job = await cluster.job(jobId);
    if (job !== 'unreachable' && (!job || !jobActive(job))) return;
    if (Date.now() > deadline)
      throw new Error(
        `job ${jobId} of this run is still ${job === 'unreachable' ? 'not known to have ended (SLURM cannot be asked)' : job.state.toLowerCase()}: stop it first`,
      );
    progress(`waiting for job ${jobId} to end…`);
  }
}

const RESUME_WAIT_MS = 120_000;

/** This machine is the login host: its own runtime build and data, the runs folder of the config. */
export function placeHere(binary: string, defaultRunsDir: string): PlaceRun {
  return async (config) => ({
    binary,
    runsDir: config.logging.runs_dir ?? defaultRunsDir,
    config: structuredClone(config),
  });
}

/**
 * A login host over SSH: the runtime built there from the extension's sources (by content hash,
 * as for an SSH run) and the data copied by content; both under `base` on its shared filesystem.
 */
export function placeOverSsh(host: string, settings: () => SshSettings, base: string, extensionRoot: string): PlaceRun {
  return async (local, progress) => {
    const installer = new RemoteRuntimeInstaller(host, settings, extensionRoot);
    const runtime = await installer.ensure(base, progress);
    const config = structuredClone(local);
    config.data.train = await installer.ensureFile(base, local.data.train, progress);
    if (local.data.val) config.data.val = await installer.ensureFile(base, local.data.val, progress);
    return { binary: runtime.binary, runsDir: `${base}/runs`, config };
  };
}

export async function launchSlurm(
  target: SlurmLaunchTarget,
  req: LaunchRequest,
  progress: (message: string) => void,
  previous?: RunManifest,
): Promise<LaunchedSlurmRun> {
  const { cluster } = target;
  const host = cluster.host;
  const runId = previous?.run_id ?? newRunId(req.config.name);
  const resume = req.resumeRunDir !== undefined;
  let runDir: string;
  let config = req.config;
  const stopSignal = 'USR1';
  const companionRoot = await target.companion(progress);
  if (resume) {
    // The run's own config.json and job.sbatch, as they were: the checkpoint was made with them.
    runDir = req.resumeRunDir!;
    await untilEnded(cluster, previous?.slurm?.job_id, progress);
    // "Continue training": the run's config.json with the new keys (training.max_steps), as fsdp-train --set does.
    if (req.overrides?.length) config = await overrideOnHost(host, `${runDir}/config.json`, req.overrides);
  } else {
    const place = await target.place(req.config, progress);
    runDir = `${place.runsDir.replace(/\/+$/, '')}/${runId}`;
    config = { ...place.config, logging: { ...place.config.logging, runs_dir: place.runsDir } };
    // The script first: one it refuses (an extra directive that breaks the run) leaves no run folder.
    const script = batchScript({
      shape: slurmJobShape(config),
      runDir,
      ranks: { kind: 'mpi', argv: [place.binary, '--config', `${runDir}/config.json`, '--run-dir', runDir] },
      // The run's owner in the batch step: the supervisor around srun, which turns the runtime's events into run.json.
      supervisor: nativeSupervisor(companionRoot, runDir),
      about: [
        `FSDP Studio run ${runId}`,
        `from ${req.configPath}${host.target === LOCAL ? '' : ` (submitted on ${host.target})`}`,
      ],
    });
    progress('writing the run folder and the batch script…');
    await writeHostFile(host, `${runDir}/config.json`, `${JSON.stringify(config, null, 2)}\n`);
    await writeHostFile(host, `${runDir}/${BATCH_SCRIPT}`, script);
  }
  const manifest = manifestFor({ ...req, config }, runId, [], host.target, previous);
  const submitted = await submitRun(
    cluster,
    companionRoot,
    runDir,
    manifest,
    { resume, stopSignal, previous },
    progress,
  );
  return { target: host.target, runDir, runId, ...submitted };
}

async function overrideOnHost(host: LoginHost, file: string, overrides: string[]): Promise<ResolvedRunConfig> {
  const r = await host.run(['cat', '--', file]);
  if (r.code !== 0) throw new Error(`reading ${file} failed: ${r.stderr || `exit ${r.code}`}`);
  const config = JSON.parse(r.stdout) as ResolvedRunConfig;
  for (const o of overrides) {
    const problem = applyOverride(config as unknown as Record<string, unknown>, o);
    if (problem) throw new Error(problem);
  }
  await writeHostFile(host, file, `${JSON.stringify(config, null, 2)}\n`);
  return config;
}

/**
 * The submission every SLURM run shares: run.json written first (status starting, the batch script,
 * the jobs so far), the script submitted held, run.json naming the new job, then the release. A job
 * that cannot be recorded is cancelled rather than left running unknown.
 */
export async function submitRun(
  cluster: SlurmCluster,
  companionRoot: string,
  runDir: string,
  starting: RunManifest,
  opts: { resume: boolean; stopSignal: 'USR1' | 'TERM'; previous: RunManifest | undefined },
  progress: (message: string) => void,
): Promise<{ jobId: string; script: string; argv: string[] }> {
  const host = cluster.host;
  const script = `${runDir}/${BATCH_SCRIPT}`;
  const argv = sbatchArgv(script, { hold: false, resume: opts.resume });
  const jobs = opts.previous?.slurm?.jobs ?? [];
  const manifest: RunManifest = {
    ...starting,
    command: argv,
    slurm: { script: BATCH_SCRIPT, jobs, stop_signal: opts.stopSignal, companion: companionRoot },
  };
  delete manifest.pids;
  delete manifest.pgid;
  await writeManifestOn(host, companionRoot, runDir, manifest);
  progress(`submitting to SLURM${host.target === LOCAL ? '' : ` on ${host.target}`}…`);
  let jobId: string;
  try {
    jobId = await cluster.submitHeld(script, opts.resume);
  } catch (e) {
    // No job id, so nothing will ever write this run's end: say it here, with sbatch's own words,
    // instead of leaving it "starting" for ever. sbatch may have queued the job (held) before it
    // failed or was killed: such a job, found by its working directory (the run folder), is
    // cancelled rather than left in the queue.
    const left = await cluster.cancelJobsIn(runDir, jobs).catch((c: Error) => `finding it failed: ${c.message}`);
    const cancelled =
      typeof left === 'string'
        ? `; a job it may have queued was not cancelled (${left})`
        : left.length
          ? `; the job it had queued (${left.join(', ')}) was cancelled`
          : '';
    const reason = `sbatch refused the job: ${(e as Error).message}${cancelled}`;
    await writeManifestOn(host, companionRoot, runDir, {
      ...manifest,
      status: 'failed',
      end_reason: reason,
      updated: Date.now() / 1000,
    }).catch(() => undefined);
    throw new Error(reason, { cause: e });
  }
  try {
    manifest.slurm = { ...manifest.slurm!, job_id: jobId, jobs: [...jobs, jobId] };
    await writeManifestOn(host, companionRoot, runDir, manifest);
    // slurmstepd opens the job's output (--output, appended to) by name as the job's user, following
    // a link: one put in the run folder in its place would carry the job's output to a file outside
    // it. Made here first while the job is held, a regular file that way; a link there refuses the job.
    await createRegularFileOn(host, companionRoot, `${runDir}/${JOB_OUTPUT.replace('%j', jobId)}`);
    await cluster.release(jobId);
  } catch (e) {
    await cluster.cancel(jobId).catch(() => undefined);
    const reason = `job ${jobId} was submitted held but not released, so it was cancelled: ${(e as Error).message}`;
    await writeManifestOn(host, companionRoot, runDir, {
      ...manifest,
      status: 'failed',
      end_reason: reason,
      updated: Date.now() / 1000,
    }).catch(() => undefined);
    throw new Error(reason, { cause: e });
  }
  return { jobId, script, argv };
}
