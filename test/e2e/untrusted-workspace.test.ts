// A hostile workspace opened untrusted in a real VS Code (Workspace Trust on, the folder not
// trusted): a launch spec whose python: is a script that leaves a marker file, workspace settings
// that hand ssh a config whose ProxyCommand is that script and name a host, and a run config that
// targets that host. Every FSDP command the palette offers is run; none may start the script.
// Without the trust enablement "Check environment" ran the spec's python for its version.
// The person's own SSH config (user settings, which apply untrusted) has a ProxyCommand that
// leaves the same marker, so any SSH connection shows: a remote run recorded earlier (seeded in
// the workspace's runs list) must not be connected to untrusted, neither at start-up nor when its
// dashboard or log is opened — both are refused with a message.
import assert from 'node:assert/strict';
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
import { repoRoot } from '../../scripts/code-server';
import { untilValue } from '../harness/until';
import { VsCodeSession } from './harness/vscode-session';

describe('e2e: an untrusted workspace runs nothing it names', function () {
  this.timeout(600_000);
  let vscode: VsCodeSession | undefined;
  let dir: string;
  let marker: string;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'fsdp-untrusted-'));
    const ws = path.join(dir, 'workspace');
    mkdirSync(path.join(ws, '.vscode'), { recursive: true });
    marker = path.join(dir, 'evil-ran');
    const evil = path.join(ws, 'evil.sh');
    // Appends what ran it, so a failure says which path reached it.
    writeFileSync(evil, `#!/bin/sh\necho "$0 $*" >> '${marker}'\n`);
    chmodSync(evil, 0o755);
    writeFileSync(path.join(ws, 'job.fsdp-launch.yaml'), 'name: job\npython: ./evil.sh\ncommand: python train.py\n');
    writeFileSync(path.join(ws, 'train.py'), 'print("never run")\n');
    // A run folder of this machine: the extension lists it, which writes its runs list to its storage.
    mkdirSync(path.join(ws, 'runs', 'local-1'), { recursive: true });
    writeFileSync(path.join(ws, 'runs', 'local-1', 'run.json'), '{}\n');
    writeFileSync(path.join(ws, 'evil_ssh_config'), `Host evilhost\n  HostName 127.0.0.1\n  ProxyCommand ${evil}\n`);
    writeFileSync(
      path.join(ws, 'remote.yaml'),
      'model: {d_model: 64, n_layers: 2, n_heads: 2, vocab_size: 256, max_seq_len: 32}\n' +
        'data: {train: data/train.tok, seq_len: 32}\n' +
        'training: {batch_size_per_gpu: 2, max_steps: 10, learning_rate: 0.001}\n' +
        'launch: {target: evilhost, device: cpu, nproc_per_node: 1}\n',
    );
    writeFileSync(
      path.join(ws, '.vscode', 'settings.json'),
      JSON.stringify({
        'fsdp.ssh.configFile': path.join(ws, 'evil_ssh_config'),
        'fsdp.ssh.hosts': ['evilhost'],
        'fsdp.remote.directory': path.join(ws, 'remote'),
      }),
    );
    writeFileSync(path.join(dir, 'user_ssh_config'), `Host userhost\n  HostName 127.0.0.1\n  ProxyCommand ${evil}\n`);
    vscode = await VsCodeSession.open({
      workspace: ws,
      untrusted: true,
      settings: { 'fsdp.ssh.configFile': path.join(dir, 'user_ssh_config') },
    });
  });
  afterEach(async function () {
    await vscode?.reportFailure(this.currentTest);
  });
  after(async () => {
    await vscode?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("offers only the commands that run nothing, and none of them starts the workspace's script", async () => {
    const session = vscode!;
    // The palette lists the FSDP commands once the workbench has read the extension's manifest;
    // wait for one that works untrusted so the list is complete.
    await untilValue(
      'the FSDP commands in the palette',
      () => session.paletteEntries('FSDP: Open memory estimator'),
      (e) => e.some((l) => l.includes('FSDP: Open memory estimator')),
      120_000,
      1000,
    );
    // Each contributed command, looked up by its own title (the palette draws only the rows in view).
    const offered: string[] = [];
    for (const title of contributedTitles()) if (await session.paletteOffers(title)) offered.push(title);
    for (const refused of ['Check environment', 'Attach to run', 'Launch FSDP run', 'Build native runtime'])
      assert.ok(
        !offered.includes(`FSDP: ${refused}`),
        `"${refused}" is offered in an untrusted workspace: ${offered.join(' | ')}`,
      );
    for (const title of offered) {
      await markToastsSeen(session);
      await session.runCommand(title);
      // Each answers — a message (no run to act on) or a question — before the next runs, so a prompt
      // that opens late cannot take the next command's palette; the one that has nothing to act on
      // without an open editor returns at once, showing nothing.
      if (!ANSWERS_NOTHING.has(title))
        await untilValue(
          `an answer to "${title}" (a new notification or a prompt)`,
          () => answer(session),
          (a) => a !== undefined,
          30_000,
          100,
        );
      // Whatever it opened (a quick pick, an input box) is closed before the next.
      await session.closeQuickInput();
    }
    // The extension is active (the commands ran in it) and has read the workspace's files: its
    // output channel says so. Only then is the marker's absence meaningful.
    await untilValue(
      'FSDP Studio activated in the output log',
      async () => findInLogs(session.saveLogs('untrusted-workspace-logs'), 'FSDP Studio'),
      (text) => text.includes('activated'),
      60_000,
      1000,
    );
    assert.ok(offered.length >= 5, `the palette offered only ${offered.join(' | ')}`);
    assert.ok(
      !existsSync(marker),
      `the workspace's script ran: ${existsSync(marker) ? readFileSync(marker, 'utf8') : ''} (commands run: ${offered.join(' | ')})`,
    );
  });

  it('a remote run recorded earlier is not connected to: its dashboard and log are refused with why', async () => {
    const session = vscode!;
    const registry = await untilValue(
      "the extension's runs list in its workspace storage",
      async () => runsList(session),
      (file) => file !== undefined,
      120_000,
      1000,
    );
    // A run launched from here on an SSH host while the folder was trusted (launchedAt: watched at start-up).
    const run = { target: 'userhost', runDir: '/srv/runs/remote-1', runId: 'remote-1', launchedAt: Date.now() };
    const listed = JSON.parse(readFileSync(registry!, 'utf8')) as { v: 1; runs: unknown[] };
    writeFileSync(registry!, JSON.stringify({ v: 1, runs: [...listed.runs, run] }));
    await session.reload();
    for (const [title, refusal] of [
      ['FSDP: Open run dashboard', 'Opening the dashboard of remote-1'],
      ['FSDP: Open run log', 'Opening the log of remote-1'],
    ]) {
      await session.runCommand(title);
      await session.pickQuickItem('remote-1');
      const message = await session.waitForNotification(refusal, 60_000);
      assert.match(message, /connects to it over SSH/);
      assert.match(message, /userhost/);
      assert.match(message, /trust this workspace first/);
      await session.page.keyboard.press('Escape');
    }
    assert.ok(
      !existsSync(marker),
      `ssh connected (its ProxyCommand ran): ${existsSync(marker) ? readFileSync(marker, 'utf8') : ''}`,
    );
  });
});

/** The runs list (runs.json) the extension keeps in its workspace storage, once written. */
function runsList(session: VsCodeSession): string | undefined {
  const args = session.server.process.spawnargs;
  const userData = args[args.indexOf('--user-data-dir') + 1];
  const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
    publisher: string;
    name: string;
  };
  const find = (d: string): string | undefined => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory() && e.name === `${pkg.publisher}.${pkg.name}` && existsSync(path.join(p, 'runs.json')))
        return path.join(p, 'runs.json');
      const below = e.isDirectory() ? find(p) : undefined;
      if (below) return below;
    }
    return undefined;
  };
  return find(userData);
}

/** Offered untrusted, and with no editor open has nothing to act on: it returns without a word. */
const ANSWERS_NOTHING = new Set(['FSDP: Choose the model of a config']);

/** Marks the notifications on screen, so that answer() sees only those that come after. */
async function markToastsSeen(session: VsCodeSession): Promise<void> {
  await session.page.evaluate(
    `document.querySelectorAll('.notifications-toasts .notification-toast').forEach((t) => t.setAttribute('data-fsdp-seen', ''))`,
  );
}

/** A notification that came after markToastsSeen, or a prompt (a quick input that is not the palette). */
async function answer(session: VsCodeSession): Promise<string | undefined> {
  return session.page.evaluate<string | undefined>(`(() => {
    const toast = document.querySelector('.notifications-toasts .notification-toast:not([data-fsdp-seen])');
    if (toast) return 'notification: ' + toast.textContent;
    const input = document.querySelector('.quick-input-widget input');
    if (input?.checkVisibility() && !input.value.startsWith('>')) return 'prompt: ' + input.getAttribute('aria-label');
    return undefined;
  })()`);
}

/** "FSDP: <title>" of every command package.json contributes. */
function contributedTitles(): string[] {
  const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
    contributes: { commands: { title: string; category?: string }[] };
  };
  return pkg.contributes.commands.map((c) => `${c.category ?? 'FSDP'}: ${c.title}`);
}

/** The text of the log files whose names contain `name`, under a copy of VS Code's logs. */
function findInLogs(dir: string, name: string): string {
  let out = '';
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.includes(name)) out += readFileSync(p, 'utf8');
    }
  };
  walk(dir);
  return out;
}
