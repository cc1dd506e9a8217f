// A person's own command (a launch spec with `slurm`) submitted to SLURM: a plain python script as
// one task per rank, torchrun as one per node (runs/slurm/slurm-ranks.ts), both under the
// companion's supervisor in the batch step, which writes run_start, run_end and the run's status as
// it does on one machine. The run folder, run.json (kind "command") and the submission are those of
// every SLURM run (slurm-launch.ts); Stop is SIGTERM to the whole job, Resume submits it again.
import type { ResolvedLaunchSpec } from '../../core/config/launch-spec';
import { newRunId } from '../folder/run-folder';
import { slurmCommandProblem } from '../../core/config/user-command';
import type { RankLaunch } from './slurm-ranks';
import { BATCH_SCRIPT, batchScript, slurmJobShape } from './slurm-script';
import type { RunManifest } from '../../core/protocol/run-manifest';
import { manifestFor, usePython, type CommandLaunchRequest } from '../launch/command-launcher';
import { writeHostFile } from '../machines/login-host';
import { supervisorPath } from '../runtime/remote-companion';
import { LOCAL } from '../machines/run-machine';
import type { SlurmCluster } from './slurm-cluster';
import { submitRun, untilEnded, type LaunchedSlurmRun } from './slurm-launch';

/** Where a command's run lives on the login host's shared filesystem. */
export interface CommandPlacement {
  /** The companion (python/ with fsdp_studio) there. */
  companionRoot: string;
  runsDir: string;
  /** The command's folder there, absolute. */
  cwd: string;
  tensorboard?: string;
}

export interface CommandSlurmTarget {
  cluster: SlurmCluster;
  place: (spec: ResolvedLaunchSpec, progress: (message: string) => void) => Promise<CommandPlacement>;
}

/** How the command's ranks start under SLURM, and how many there are. */
export function commandRanks(spec: ResolvedLaunchSpec): {
  ranks: RankLaunch;
  tasksPerNode: number;
  worldSize?: number;
} {
  const problem = slurmCommandProblem(spec.command.launcher);
  if (problem) throw new Error(problem);
  if (spec.command.launcher === 'torchrun') {
    const perNode = spec.command.nprocPerNode;
    return {
      ranks: { kind: 'torchrun', argv: spec.command.argv },
      tasksPerNode: 1,
      ...(perNode ? { worldSize: perNode * spec.nnodes } : {}),
    };
  }
  return {
    ranks: { kind: 'env', argv: spec.command.argv },
    tasksPerNode: spec.nproc,
    worldSize: spec.nproc * spec.nnodes,
  };
}

export async function launchCommandOnSlurm(
  target: CommandSlurmTarget,
  req: CommandLaunchRequest,
  progress: (message: string) => void,
  previous?: RunManifest,
): Promise<LaunchedSlurmRun> {
  const { cluster } = target;
  const host = cluster.host;
  const { spec } = req;
  const runId = previous?.run_id ?? newRunId(spec.name);
  const resume = req.resumeRunDir !== undefined;
  const { ranks, tasksPerNode, worldSize } = commandRanks(spec);
  const place = await target.place(spec, progress);
  const runDir = req.resumeRunDir ?? `${place.runsDir.replace(/\/+$/, '')}/${runId}`;
  if (resume) {
    await untilEnded(cluster, previous?.slurm?.job_id, progress);
  } else {
    const shape = slurmJobShape({
      name: spec.name,
      launch: { nnodes: spec.nnodes, nproc_per_node: tasksPerNode, slurm: spec.slurm ?? {} },
    } as Parameters<typeof slurmJobShape>[0]);
    const script = batchScript({
      shape,
      runDir,
      ranks,
      env: spec.env,
      cwd: place.cwd,
      supervisor: [spec.python, supervisorPath(place.companionRoot), '--run-dir', runDir, ...usePython(spec), '--'],
      about: [
        `FSDP Studio run ${runId}`,
        `from ${req.specPath}${host.target === LOCAL ? '' : ` (submitted on ${host.target})`}`,
      ],
    });
    progress('writing the run folder and the batch script…');
    await writeHostFile(host, `${runDir}/${BATCH_SCRIPT}`, script);
  }
  const starting = manifestFor(
    { ...req, spec: { ...spec, cwd: place.cwd } },
    runId,
    [],
    host.target,
    host.target,
    place.tensorboard,
    previous,
  );
  starting.world = {
    size: worldSize ?? 1,
    nnodes: spec.nnodes,
    nproc_per_node: spec.command.nprocPerNode ?? tasksPerNode,
  };
  const submitted = await submitRun(
    cluster,
    place.companionRoot,
    runDir,
    starting,
    { resume, stopSignal: 'TERM', previous },
    progress,
  );
  return { target: host.target, runDir, runId, ...submitted };
}
