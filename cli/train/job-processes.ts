// Every process of a job started by mpirun: Open MPI puts each rank in a process group of its
// own, so a signal to mpirun's group does not reach them, and SIGTERM to mpirun leaves a frozen or
// busy rank behind. mpirun is started as the leader of a new session (detached), and its ranks stay
// in that session: aborting the job kills the session's processes one by one (Linux /proc).
import { readdirSync, readFileSync } from 'node:fs';

/** Pids of the processes whose session is `sid` (the session leader included). */
export function sessionMembers(sid: number): number[] {
  const members: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // /proc/PID/stat: "pid (comm) state ppid pgrp session …"; comm may hold spaces and parentheses.
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[3]) === sid) members.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return members;
}

/** SIGKILLs every process of session `sid`, the leader last; returns how many were signalled. */
export function killSession(sid: number): number {
  const members = sessionMembers(sid).filter((pid) => pid !== process.pid);
  for (const pid of [...members.filter((p) => p !== sid), sid]) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  return members.length;
}
