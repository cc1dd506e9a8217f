// Whether a watched run's processes still live. A run that ended without a run_end crashed, was
// killed, or was refused before it began: its process group (or, for runs started without one,
// its pids) is gone, or its launcher marked it ended in run.json. Every run gets this check, whoever
// started it; a SLURM run's job is asked about instead (runs/watch/slurm-job-watch.ts).
import os from 'node:os';
import { describeEndWithoutRunEnd, type MemoryAtEnd } from '../../core/runs/run-end';
import { cgroupMemoryOf, readCgroupMemory, type CgroupMemory } from './cgroup-memory';
import { runGroupMarkOf } from '../stop/run-group';
import type { RunMachine } from '../machines/run-machine';
import type { RunStream } from './run-stream';
import type { SlurmJobWatch } from './slurm-job-watch';
import { ENDED, type Slot, type WatchedRun } from './watched-run';

/** How often a live run's processes are checked (a crash writes no run_end). */
const LIVENESS_MS = { local: 3000, ssh: 15000 };
/** How much of a file's end is read: stderr.log for a failure message, metrics.jsonl for its last line. */
const TAIL_BYTES = 4096;

export class RunLiveness {
  private timer: NodeJS.Timeout | undefined;
  /** The memory cgroup of the run's process group as first seen alive (runs on this machine). */
  private cgroupAtStart: { pgid: number; cgroup: CgroupMemory } | undefined;
  private checking = false;

  /** `vanished`: why the run ended without a run_end, once it is known to have. */
  constructor(
    private readonly run: WatchedRun,
    private readonly stream: RunStream,
    private readonly slurm: SlurmJobWatch,
    private readonly vanished: Slot<string | undefined>,
  ) {}

  schedule(): void {
    clearTimeout(this.timer);
    const every = this.run.machine.target === 'local' ? LIVENESS_MS.local : LIVENESS_MS.ssh;
    this.timer = setTimeout(() => void this.check(), every);
  }

  cancel(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /**
   * The run's process group's memory cgroup while it is alive (this machine only): its OOM-kill
   * count then is what the count at the end is compared with.
   */
  async noteCgroup(): Promise<void> {
    const pgid = this.run.manifest()?.pgid;
    if (this.run.machine.target !== 'local' || pgid === undefined || this.cgroupAtStart?.pgid === pgid) return;
    const cgroup = await cgroupMemoryOf(pgid);
    if (cgroup && this.run.manifest()?.pgid === pgid) this.cgroupAtStart = { pgid, cgroup };
  }

  private async check(): Promise<void> {
    const { run, stream, slurm } = this;
    if (run.disposed() || this.checking || (!stream.followingMetrics && !slurm.watched())) return;
    this.checking = true;
    try {
      await run.refreshManifest();
      const jobId = slurm.id();
      if (jobId) {
        await slurm.check(jobId);
        run.emit([]);
        return;
      }
      await this.noteCgroup();
      if ((run.isLive() && (await this.processesAlive()) === false) || this.endedWithoutRunEnd()) {
        // Its last lines may still be unread: the processes are gone, or the owner wrote run.json's
        // end after the run_end it took it from, so the log holds all it will: read it to its end
        // (a condition, not a wait a loaded machine outlasts), then decide.
        await stream.readToTheEnd();
        await run.refreshManifest();
        // A long log still being read may hold the end: only the file's last line tells.
        if (!run.disposed() && (run.isLive() || this.endedWithoutRunEnd()) && !(await this.logEndsWithRunEnd())) {
          this.vanished.set(await this.describeEnd());
          run.stopFollowing();
        }
      }
      run.emit([]);
    } finally {
      this.checking = false;
      if (stream.followingMetrics || slurm.watched()) this.schedule();
    }
  }

  /** run.json says the run ended, but the log has no run_end for it (or only its owner's stand-in for one). */
  private endedWithoutRunEnd(): boolean {
    const m = this.run.manifest();
    const end = this.run.history.end;
    return !!m && ENDED.has(m.status) && (!end || end.stand_in === true) && !this.vanished.get();
  }

  /**
   * The log's last line is the current attempt's run_end. Where run.json names its attempt, whose
   * the end is is told by the stream: the attempt the end names, else where it lies against where the
   * attempt's events begin. A run.json from before attempts: a launch's run.json ("starting") written
   * after the end's time makes the end the last run's (the relaunched trainer died before a line).
   */
  private async logEndsWithRunEnd(): Promise<boolean> {
    const { machine, metricsFile } = this.run;
    const last = await lastLineOf(machine, metricsFile).catch(() => undefined);
    if (!last) return false;
    try {
      const event = JSON.parse(last.text) as { type?: unknown; time?: unknown; attempt?: unknown; stand_in?: unknown };
      // The owner's stand-in for an end the runtime never wrote: how it ended is still to be described.
      if (event.type !== 'run_end' || event.stand_in === true) return false;
      const m = this.run.manifest();
      if (m?.attempt)
        return typeof event.attempt === 'string' ? event.attempt === m.attempt.id : last.offset >= m.attempt.log_from;
      return !(
        m?.status === 'starting' &&
        m.updated !== undefined &&
        typeof event.time === 'number' &&
        event.time < m.updated
      );
    } catch {
      return false;
    }
  }

  private async processesAlive(): Promise<boolean | undefined> {
    const { machine } = this.run;
    const m = this.run.manifest();
    if (!m) return undefined;
    // A group whose leader is no longer the process the run started as is not the run's, however
    // alive (runs/stop/run-group.ts). Runs from before leader_start was recorded: the group alone.
    if (m.pgid !== undefined && m.leader_start !== undefined) {
      const v = await machine.checkRunGroup(runGroupMarkOf(m)!).catch(() => undefined);
      return v === undefined ? undefined : v.verdict === 'ok';
    }
    if (m.pgid !== undefined) return machine.isAlive(m.pgid);
    if (m.pids?.length) return machine.processesAlive(m.pids, m.host);
    return undefined;
  }

  private async describeEnd(): Promise<string> {
    const m = this.run.manifest();
    const { history } = this.run;
    const memory = await this.memoryAtEnd();
    return describeEndWithoutRunEnd({
      ...(m && ENDED.has(m.status) && m.end_reason ? { manifestReason: m.end_reason } : {}),
      ...(m?.pgid !== undefined ? { pgid: m.pgid } : {}),
      ...(history.start ? { start: history.start } : {}),
      ...(memory ? { memory } : {}),
      ...(await this.stderrOfThisAttempt().then((stderrTail) => (stderrTail ? { stderrTail } : {}))),
    });
  }

  /**
   * The end of stderr.log as this launch wrote it: a resume appends to the file, so what an earlier
   * attempt said (a Stop's messages) is not quoted as this one's last words.
   */
  private async stderrOfThisAttempt(): Promise<string | undefined> {
    const { machine, ref } = this.run;
    const file = `${ref.runDir}/stderr.log`;
    const from = this.run.manifest()?.output_from?.stderr ?? 0;
    try {
      const { size } = await machine.readFileFrom(file, 0, 0);
      const start = Math.max(from, size - TAIL_BYTES);
      if (start >= size) return undefined;
      return (await machine.readFileFrom(file, start, size - start)).data.toString('utf8');
    } catch {
      return undefined;
    }
  }

  /** What the run could hold and held at its end, and whether its cgroup counted an OOM kill meanwhile (this machine only). */
  private async memoryAtEnd(): Promise<MemoryAtEnd | undefined> {
    if (this.run.machine.target !== 'local') return undefined;
    const before = this.cgroupAtStart?.cgroup;
    const now = before ? await readCgroupMemory(before.dir, before.version) : undefined;
    const rss = [...this.run.history.residentByRank.values()].reduce((sum, s) => sum + (s.lastValue ?? 0), 0);
    // A cgroup with a limit of its own: its peak is this run's room; without one, the machine's
    // memory is the room and the cgroup's peak (shared with everything else in it) says nothing.
    const limited = now?.limit !== undefined;
    return {
      limit: limited ? now!.limit! : os.totalmem(),
      limitOf: limited ? `its memory cgroup (${now!.dir})` : 'the machine',
      ...(limited && now!.peak !== undefined
        ? { used: now!.peak, usedWhat: "the cgroup's peak was" }
        : rss > 0
          ? { used: rss, usedWhat: 'its ranks last held (resident)' }
          : {}),
      ...(before?.oomKills !== undefined && now?.oomKills !== undefined && now.oomKills > before.oomKills
        ? { oomKill: true }
        : {}),
    };
  }
}

/** A file's last line (trailing newlines aside) and where it begins, read from one size of the file. */
async function lastLineOf(machine: RunMachine, file: string): Promise<{ text: string; offset: number } | undefined> {
  const { size } = await machine.readFileFrom(file, 0, 0);
  const from = Math.max(0, size - TAIL_BYTES);
  const { data } = await machine.readFileFrom(file, from, size - from);
  let end = data.length;
  while (end > 0 && data[end - 1] === 0x0a) end--;
  if (end === 0) return undefined;
  const start = data.lastIndexOf(0x0a, end - 1) + 1;
  return { text: data.subarray(start, end).toString('utf8'), offset: from + start };
}
