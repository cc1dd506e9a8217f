// The SSH hosts a person can pick: the concrete `Host` aliases of their ssh config (patterns with
// * or ? and negations are not hosts), following `Include`, plus the ones named in the settings.
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export function sshConfigHosts(configFile = path.join(os.homedir(), '.ssh', 'config')): string[] {
  const hosts = new Set<string>();
  readConfig(configFile, hosts, new Set());
  return [...hosts];
}

function readConfig(file: string, hosts: Set<string>, seen: Set<string>): void {
  if (seen.has(file) || seen.size > 32) return;
  seen.add(file);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return;
  }
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    const m = /^(\w+)\s*=?\s*(.*)$/.exec(line);
    if (!m || line.startsWith('#')) continue;
    const [, keyword, rest] = m;
    const words = rest.split(/\s+/).filter(Boolean);
    if (keyword.toLowerCase() === 'host') {
      for (const w of words) if (!/[*?!]/.test(w)) hosts.add(w);
    } else if (keyword.toLowerCase() === 'include') {
      // Relative includes are relative to ~/.ssh, as ssh_config(5) says.
      for (const w of words) {
        const p = w.startsWith('~/')
          ? path.join(os.homedir(), w.slice(2))
          : path.isAbsolute(w)
            ? w
            : path.join(os.homedir(), '.ssh', w);
        if (!/[*?]/.test(p)) readConfig(p, hosts, seen);
      }
    }
  }
}
