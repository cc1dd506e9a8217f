// What the editor brings to runs/launch/launch-run.ts's door: its own machines and clusters (the
// ones that then watch the run), the SSH and remote-folder settings as they are now, and where the
// runtime, the trainer CLI and the companion are in this installation.
import type { LaunchEnvironment } from '../../runs/launch/launch-run';
import type { SshMachine } from '../../runs/machines/ssh-machine';
import type { StudioContext } from '../studio-context';
import { remoteBase } from './runs';

export function launchEnvironment(studio: StudioContext): LaunchEnvironment {
  const cli = studio.trainerCli();
  return {
    machine: (target) => studio.runs.machine(target),
    sshMachine: (alias) => studio.runs.machine(alias) as SshMachine,
    cluster: (loginHost) => studio.runs.cluster(loginHost),
    sshSettings: () => studio.runs.sshSettings(),
    remoteBase: remoteBase(),
    extensionRoot: studio.extension.extensionPath,
    ...(cli ? { localTrainer: { node: process.execPath, cli, native: studio.localRuntime.binary } } : {}),
    localNative: studio.runtime.cliPath,
  };
}
