// A real one-node SLURM cluster on this machine for tests of cluster runs: munged, slurmctld and
// slurmd (Debian's slurm-wlm and munge), everything in one temporary folder with free ports, owned
// by the harness as its children (each daemon in the foreground) and stopped with them. Nothing of
// the machine's own SLURM or munge set-up is read or changed; client commands reach this cluster
// through SLURM_CONF (see `env`). Runs as root, as the tests do (SlurmUser=root).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { freePort } from '../../scripts/code-server';
import { untilValue } from './until';

export interface LocalSlurmOptions {
  /**
   * CPUs the node offers (default 4): more than the machine's cores is fine (slurmd takes the
   * configured values, SlurmdParameters=config_overrides), so a test can fill the node with a
   * blocker job and still run a 2-task job after it.
   */
  cpus?: number;
  /** Seconds a finished job stays in squeue (MinJobAge, default 300 as in Slurm). */
  minJobAgeS?: number;
  /** The partition's name (default "debug"). */
  partition?: string;
}

/** How long the daemons get to come up: a loaded 2-core machine can take a while. */
const START_TIMEOUT_MS = 60_000;

export class LocalSlurm {
  private constructor(
    readonly dir: string,
    /** slurm.conf of this cluster: SLURM_CONF for every client command. */
    readonly conf: string,
    readonly partition: string,
    /** The node's name (this machine's short host name). */
    readonly node: string,
    readonly cpus: number,
    private readonly daemons: Map<string, ChildProcess>,
    private readonly logs: Map<string, () => string>,
  ) {}

  /** Environment for client commands (sbatch, squeue, …) that talk to this cluster. */
  get env(): Record<string, string> {
    return { SLURM_CONF: this.conf };
  }

  static async start(opts: LocalSlurmOptions = {}): Promise<LocalSlurm> {
    for (const tool of ['/usr/sbin/munged', '/usr/sbin/slurmctld', '/usr/sbin/slurmd']) {
      if (!existsSync(tool))
        throw new Error(
          `${tool} is missing: the SLURM tests need Debian's slurm-wlm and munge (scripts/setup/system-packages.mjs)`,
        );
    }
    const dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-slurm-'));
    const file = (name: string) => path.join(dir, name);
    const node = os.hostname().split('.')[0];
    const cpus = opts.cpus ?? 4;
    const partition = opts.partition ?? 'debug';
    const daemons = new Map<string, ChildProcess>();
    const logs = new Map<string, () => string>();
    const cluster = new LocalSlurm(dir, file('slurm.conf'), partition, node, cpus, daemons, logs);
    try {
      writeFileSync(file('munge.key'), randomBytes(1024));
      chmodSync(file('munge.key'), 0o400);
      for (const d of ['state', 'spool', 'munge', 'tmp']) mkdirSync(file(d));
      // mpi.conf (read beside slurm.conf): the PMIx plugin's own base for those folders, the same one.
      writeFileSync(file('mpi.conf'), `PMIxCliTmpDirBase=${file('tmp')}\n`);
      const [ctldPort, slurmdPort] = await twoFreePorts();
      const memoryMb = Math.floor(os.totalmem() / 2 ** 20 / 2);
      writeFileSync(
        file('slurm.conf'),
        [
          `ClusterName=fsdp-test-${process.pid}`,
          `SlurmctldHost=${node}`,
          'SlurmUser=root',
          'SlurmdUser=root',
          `SlurmctldPort=${ctldPort}`,
          `SlurmdPort=${slurmdPort}`,
          'AuthType=auth/munge',
          // cred_expire: a requeued job waits this long before it may start again (120 s by default).
          `AuthInfo=socket=${file('munge/munge.socket')},cred_expire=10`,
          'CredType=cred/munge',
          `StateSaveLocation=${file('state')}`,
          `SlurmdSpoolDir=${file('spool')}`,
          // PMIx makes a folder per job step under TmpFS named by uid, job id and step id only
          // (spmix_appdir_0_3.0): every test cluster numbers its jobs from 1, so in the shared /tmp
          // a folder left by an earlier cluster's job 3 made this cluster's job 3 fail to launch.
          `TmpFS=${file('tmp')}`,
          `SlurmctldPidFile=${file('slurmctld.pid')}`,
          `SlurmdPidFile=${file('slurmd.pid')}`,
          `SlurmctldLogFile=${file('slurmctld.log')}`,
          `SlurmdLogFile=${file('slurmd.log')}`,
          'ProctrackType=proctrack/linuxproc',
          'TaskPlugin=task/none',
          'JobAcctGatherType=jobacct_gather/none',
          // No accounting storage (slurmdbd needs a MariaDB server): sacct says so, and jobs are
          // followed with squeue and the run folder, as on a cluster without accounting.
          'SelectType=select/cons_tres',
          'SelectTypeParameters=CR_Core',
          'SlurmdParameters=config_overrides',
          'ReturnToService=2',
          'MpiDefault=none',
          `MinJobAge=${opts.minJobAgeS ?? 300}`,
          // Schedule and estimate start times promptly: tests wait on them.
          'SchedulerType=sched/backfill',
          'SchedulerParameters=bf_interval=1,sched_interval=2,sched_min_interval=100000',
          // A job killed by its time limit or scancel gets a few seconds for its graceful stop.
          'KillWait=10',
          'InactiveLimit=0',
          `NodeName=${node} CPUs=${cpus} RealMemory=${memoryMb} State=UNKNOWN`,
          `PartitionName=${partition} Nodes=${node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO`,
        ].join('\n') + '\n',
      );
      cluster.daemon('munged', '/usr/sbin/munged', [
        '-F',
        `--key-file=${file('munge.key')}`,
        `--socket=${file('munge/munge.socket')}`,
        `--pid-file=${file('munge/munged.pid')}`,
        `--log-file=${file('munge/munged.log')}`,
        `--seed-file=${file('munge/munged.seed')}`,
        '--force',
      ]);
      await cluster.waitFor('munged socket', async () => existsSync(file('munge/munge.socket')));
      cluster.daemon('slurmctld', '/usr/sbin/slurmctld', ['-D', '-i', '-f', file('slurm.conf')]);
      await cluster.waitFor('slurmctld answering', async () =>
        cluster.run(['scontrol', 'ping']).stdout.includes('is UP'),
      );
      cluster.daemon('slurmd', '/usr/sbin/slurmd', ['-D', '-f', file('slurm.conf')]);
      await cluster.waitFor(`node ${node} idle`, async () =>
        /^idle/.test(cluster.run(['sinfo', '-h', '-n', node, '-o', '%T']).stdout.trim()),
      );
    } catch (e) {
      await cluster.stop();
      throw e;
    }
    return cluster;
  }

  /** Runs a client command against this cluster; never throws on its exit status. */
  run(argv: string[], input?: string): { status: number; stdout: string; stderr: string } {
    const r = spawnSync(argv[0], argv.slice(1), {
      encoding: 'utf8',
      env: { ...process.env, ...this.env },
      timeout: 60_000,
      ...(input !== undefined ? { input } : {}),
    });
    return { status: r.status ?? 1, stdout: r.stdout ?? '', stderr: r.stderr ?? r.error?.message ?? '' };
  }

  /** Like run, but a failure is an error with the command's message. */
  check(argv: string[], input?: string): string {
    const r = this.run(argv, input);
    if (r.status !== 0) throw new Error(`${argv.join(' ')} failed (${r.status}): ${r.stderr}`);
    return r.stdout;
  }

  /** The job's state as the controller sees it (squeue), or undefined once it left the queue. */
  jobState(jobId: string): string | undefined {
    const out = this.run(['squeue', '-h', '-j', jobId, '-o', '%T']).stdout.trim();
    return out || undefined;
  }

  /**
   * Submits a job that takes every CPU of the node for `minutes` (its output kept in the cluster's
   * folder), so a job submitted after it waits for resources; returns its id.
   */
  fillNode(minutes = 10): string {
    return this.check([
      'sbatch',
      '--parsable',
      `--ntasks=${this.cpus}`,
      `--time=${minutes}`,
      `--output=${path.join(this.dir, 'blocker-%j.out')}`,
      '--wrap',
      `sleep ${minutes * 60}`,
    ]).trim();
  }

  /** What the daemons logged, for a failing test's message. */
  daemonLogs(): string {
    return [...this.logs].map(([name, log]) => `--- ${name}\n${log().slice(-3000)}`).join('\n');
  }

  /**
   * Cancels every job, waits until their processes are gone, stops the daemons and removes the
   * folder. Job processes (slurmstepd and what it runs) are not the daemons' children: slurmd
   * detaches them, so they are found by the spool folder in their environment.
   */
  async stop(): Promise<void> {
    if (this.daemons.get('slurmctld')?.exitCode === null) {
      this.run(['scancel', '--full', '--quiet', '--partition', this.partition]);
      await untilValue(
        'the jobs to end',
        async () => this.run(['squeue', '-h', '-t', 'all', '-o', '%T']).stdout,
        (s) => !/RUNNING|COMPLETING|PENDING|CONFIGURING|SUSPENDED/.test(s),
        30_000,
        300,
      ).catch(() => undefined);
    }
    for (const pid of jobProcesses(this.dir)) kill(pid, 'SIGKILL');
    for (const name of ['slurmd', 'slurmctld', 'munged']) {
      const d = this.daemons.get(name);
      if (!d || d.exitCode !== null || d.signalCode !== null) continue;
      const exited = new Promise((resolve) => d.once('exit', resolve));
      d.kill('SIGTERM');
      const timer = setTimeout(() => d.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    for (const pid of jobProcesses(this.dir)) kill(pid, 'SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
  }

  private daemon(name: string, exe: string, args: string[]): void {
    const child = spawn(exe, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...this.env } });
    let log = '';
    const keep = (b: Buffer) => {
      log += b.toString();
      if (log.length > 100_000) log = log.slice(-50_000);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    this.daemons.set(name, child);
    this.logs.set(name, () => {
      const fileLog = path.join(this.dir, name === 'munged' ? 'munge/munged.log' : `${name}.log`);
      return log + (existsSync(fileLog) ? readFileSync(fileLog, 'utf8') : '');
    });
  }

  private async waitFor(what: string, cond: () => Promise<boolean>): Promise<void> {
    try {
      await untilValue(
        what,
        async () => {
          for (const [name, d] of this.daemons)
            if (d.exitCode !== null) throw new Error(`${name} exited with code ${d.exitCode}`);
          return cond();
        },
        (ok) => ok,
        START_TIMEOUT_MS,
        200,
      );
    } catch (e) {
      throw new Error(`${(e as Error).message}\n${this.daemonLogs()}`, { cause: e });
    }
  }
}

async function twoFreePorts(): Promise<[number, number]> {
  const a = await freePort();
  let b = await freePort();
  while (b === a) b = await freePort();
  return [a, b];
}

/** Processes of this cluster's jobs: their environment names its SLURM_CONF or spool folder. */
function jobProcesses(dir: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const environ = readFileSync(`/proc/${name}/environ`, 'latin1');
      const cmd = readFileSync(`/proc/${name}/cmdline`, 'latin1');
      if (environ.includes(`${dir}/`) || (cmd.startsWith('slurmstepd') && environ.includes(dir)))
        out.push(Number(name));
    } catch {
      /* exited, or not ours to read */
    }
  }
  return out;
}

function kill(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    /* gone already */
  }
}
