// The memory cgroup of a run's processes on this machine (cgroup v1 or v2): its limit, the most
// it held, and how many times the kernel's out-of-memory killer acted in it. Read while the run is
// alive (its cgroup is named in /proc/<pid>/cgroup) and again at its end, so a SIGKILL can be told
// from an OOM kill by the kernel's own count instead of guessed.
import { readFile } from 'node:fs/promises';
import os from 'node:os';

export interface CgroupMemory {
  /** The cgroup's folder. */
  dir: string;
  version: 1 | 2;
  /** Its limit, when it has one below the machine's memory. */
  limit?: number;
  /** The most its processes held (v1 max_usage_in_bytes, v2 memory.peak where the kernel has it). */
  peak?: number;
  /** OOM kills counted in it (v1 memory.oom_control, v2 memory.events). */
  oomKills?: number;
}

/** The memory cgroup of process `pid`, read now; undefined when the process or the files are not there. */
export async function cgroupMemoryOf(pid: number): Promise<CgroupMemory | undefined> {
  const text = await readFile(`/proc/${pid}/cgroup`, 'utf8').catch(() => undefined);
  if (!text) return undefined;
  let found: { dir: string; version: 1 | 2 } | undefined;
  for (const line of text.split('\n')) {
    const [id, controllers, path] = [
      line.slice(0, line.indexOf(':')),
      line.split(':')[1],
      line.split(':').slice(2).join(':'),
    ];
    if (controllers === undefined || path === undefined) continue;
    if (controllers.split(',').includes('memory'))
      found = { dir: `/sys/fs/cgroup/memory${path === '/' ? '' : path}`, version: 1 };
    else if (id === '0' && controllers === '' && !found)
      found = { dir: `/sys/fs/cgroup${path === '/' ? '' : path}`, version: 2 };
  }
  return found ? readCgroupMemory(found.dir, found.version) : undefined;
}

/** The cgroup at `dir` read again (at the run's end: its processes are gone, the cgroup's counts stay). */
export async function readCgroupMemory(dir: string, version: 1 | 2): Promise<CgroupMemory | undefined> {
  const read = (name: string) => readFile(`${dir}/${name}`, 'utf8').catch(() => undefined);
  const [limitText, peakText, countsText] = await Promise.all(
    version === 1
      ? [read('memory.limit_in_bytes'), read('memory.max_usage_in_bytes'), read('memory.oom_control')]
      : [read('memory.max'), read('memory.peak'), read('memory.events')],
  );
  if (limitText === undefined && countsText === undefined) return undefined;
  const limit = Number(limitText?.trim());
  const peak = Number(peakText?.trim());
  const kills = /^oom_kill (\d+)$/m.exec(countsText ?? '');
  return {
    dir,
    version,
    // v1 says "no limit" with a huge number, v2 with "max".
    ...(Number.isFinite(limit) && limit > 0 && limit < os.totalmem() ? { limit } : {}),
    ...(Number.isFinite(peak) && peak > 0 ? { peak } : {}),
    ...(kills ? { oomKills: Number(kills[1]) } : {}),
  };
}
