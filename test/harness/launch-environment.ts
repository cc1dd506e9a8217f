// A LaunchEnvironment (runs/launch/launch-run.ts) for the tests: the machines, clusters and
// settings a test has made, instead of the editor's. What a test does not give is refused when a
// launch asks for it.
import type { RunManifest } from '../../core/protocol/run-manifest';
import type { LaunchEnvironment } from '../../runs/launch/launch-run';
import type { LocalTrainer } from '../../runs/launch/launcher';
import { LocalMachine } from '../../runs/machines/local-machine';
import { LOCAL, type RunMachine } from '../../runs/machines/run-machine';
import { SshMachine } from '../../runs/machines/ssh-machine';
import type { SshSettings } from '../../runs/machines/ssh';
import type { SlurmCluster } from '../../runs/slurm/slurm-cluster';
import { repoRoot } from '../../scripts/code-server';

export interface TestLaunchParts {
  local?: RunMachine;
  /** SSH machines by alias (made from `sshSettings` when not given). */
  ssh?: Map<string, SshMachine>;
  sshSettings?: () => SshSettings;
  clusters?: Map<string, SlurmCluster>;
  remoteBase?: string;
  localTrainer?: LocalTrainer;
  localNative?: string;
}

export function testLaunchEnvironment(parts: TestLaunchParts): LaunchEnvironment {
  const local = parts.local ?? new LocalMachine();
  const ssh = parts.ssh ?? new Map<string, SshMachine>();
  const sshMachine = (alias: string): SshMachine => {
    let m = ssh.get(alias);
    if (!m) {
      if (!parts.sshSettings) throw new Error(`the test gave no SSH settings for ${alias}`);
      m = new SshMachine(alias, parts.sshSettings);
      ssh.set(alias, m);
    }
    return m;
  };
  return {
    machine: (target) => (target === LOCAL ? local : sshMachine(target)),
    sshMachine,
    cluster: (loginHost) => {
      const c = parts.clusters?.get(loginHost);
      if (!c) throw new Error(`the test gave no SLURM cluster for ${loginHost}`);
      return c;
    },
    sshSettings: () => parts.sshSettings?.() ?? {},
    remoteBase: parts.remoteBase ?? '~/.fsdp-studio',
    extensionRoot: repoRoot,
    ...(parts.localTrainer ? { localTrainer: parts.localTrainer } : {}),
    ...(parts.localNative ? { localNative: parts.localNative } : {}),
  };
}

/** launchRun's options for a resume (the run's run.json), or none. */
export function previousOf(manifest: RunManifest | undefined): { previous?: RunManifest } {
  return manifest ? { previous: manifest } : {};
}
